// Integration tests: bad input gives a clear error naming the parameter, and leaves no file.

#include "ComputeBackend.h"
#include "Error.h"
#include "GpuRuntime.h"
#include "PcaJob.h"
#include "TestFeedback.h"
#include "TestSupport.h"

#include <QFile>
#include <QtTest>

using namespace hyperstream;

namespace {

// Runs the job, expecting an Error about `parameter` whose message contains `words`; checks
// that the folder holds exactly the files it held before.
void expectError(const PcaOptions& options, const QString& parameter, const QString& words,
                 const QString& folder) {
  QStringList before = testing::filesIn(folder);
  before.sort();
  TestFeedback feedback;
  try {
    runPca(options, feedback);
    QFAIL("no error");
  } catch (const Error& error) {
    QCOMPARE(QString::fromStdString(error.parameter()), parameter);
    QVERIFY2(QString(error.what()).contains(words, Qt::CaseInsensitive), error.what());
  }
  QStringList after = testing::filesIn(folder);
  after.sort();
  QCOMPARE(after, before);
}

PcaOptions optionsFor(const QString& input, const QString& output) {
  PcaOptions options;
  options.input = input.toStdString();
  options.output = output.toStdString();
  return options;
}

QString goodInput(const QString& dir) {
  QString path = dir + "/good.tif";
  if (!QFile::exists(path))
    testing::writeCube(testing::correlatedCube(20, 20, 4, 1), path.toStdString(), GDT_Float32);
  return path;
}

}  // namespace

class ErrorTests : public QObject {
  Q_OBJECT
 private slots:
  void missingFile() {
    const QString dir = testing::tempDir();
    expectError(optionsFor(dir + "/nope.tif", dir + "/out.tif"), "INPUT", "does not exist", dir);
  }

  void notARaster() {
    const QString dir = testing::tempDir();
    QFile text(dir + "/notes.txt");
    QVERIFY(text.open(QIODevice::WriteOnly));
    text.write("this is not an image\n");
    text.close();
    expectError(optionsFor(dir + "/notes.txt", dir + "/out.tif"), "INPUT", "not a raster", dir);
  }

  void oneBand() {
    const QString dir = testing::tempDir();
    testing::Cube cube = testing::correlatedCube(10, 10, 1, 1);
    testing::writeCube(cube, (dir + "/one.tif").toStdString(), GDT_Float32);
    expectError(optionsFor(dir + "/one.tif", dir + "/out.tif"), "INPUT", "at least two bands", dir);
    PcaOptions options = optionsFor(goodInput(dir), dir + "/out.tif");
    options.bands = {2};
    expectError(options, "BANDS", "at least two bands", dir);
  }

  void noValidPixel() {
    const QString dir = testing::tempDir();
    testing::Cube cube = testing::correlatedCube(10, 10, 3, 1);
    cube.nodata.assign(3, -1.0);
    for (int64_t p = 0; p < cube.pixels(); ++p) cube.values[p * 3 + p % 3] = -1.0;
    testing::writeCube(cube, (dir + "/empty.tif").toStdString(), GDT_Float32);
    expectError(optionsFor(dir + "/empty.tif", dir + "/out.tif"), "INPUT", "no valid pixel", dir);
  }

  void unwritableOutput() {
    const QString dir = testing::tempDir();
    const QString input = goodInput(dir);
    expectError(optionsFor(input, dir + "/missing/out.tif"), "OUTPUT", "does not exist", dir);
    // /proc refuses new files even to root, so this holds whoever runs the tests.
    expectError(optionsFor(input, "/proc/hyperstream-out.tif"), "OUTPUT", "cannot create", dir);
    PcaOptions options = optionsFor(input, dir + "/out.tif");
    options.statsJson = (dir + "/missing/stats.json").toStdString();
    expectError(options, "OUTPUT_STATS", "does not exist", dir);
  }

  void outputIsInput() {
    const QString dir = testing::tempDir();
    const QString input = goodInput(dir);
    expectError(optionsFor(input, input), "OUTPUT", "is the input", dir);
    expectError(optionsFor(input, dir + "/./good.tif"), "OUTPUT", "is the input", dir);
    // ENVI: the header is one of the input's files too.
    testing::writeCube(testing::correlatedCube(5, 5, 3, 1), (dir + "/e.bsq").toStdString(),
                       GDT_Int16, "ENVI");
    PcaOptions options = optionsFor(dir + "/e.bsq", dir + "/e.hdr");
    expectError(options, "OUTPUT", "is the input", dir);
    options = optionsFor(input, dir + "/out.tif");
    options.statsJson = (dir + "/out.tif").toStdString();
    expectError(options, "OUTPUT_STATS", "another output", dir);
  }

  void corruptedFile() {
    const QString dir = testing::tempDir();
    // Compressed, so that GDAL itself finds the strips cut short.
    testing::writeCube(testing::correlatedCube(300, 200, 6, 2), (dir + "/whole.tif").toStdString(),
                       GDT_Float32, "GTiff", {"COMPRESS=DEFLATE"});
    QFile whole(dir + "/whole.tif");
    QVERIFY(whole.open(QIODevice::ReadOnly));
    const QByteArray bytes = whole.readAll();
    whole.close();
    // The header survives, the pixel data is cut short.
    QFile cut(dir + "/cut.tif");
    QVERIFY(cut.open(QIODevice::WriteOnly));
    cut.write(bytes.left(bytes.size() / 2));
    cut.close();
    QFile::remove(dir + "/whole.tif");
    expectError(optionsFor(dir + "/cut.tif", dir + "/out.tif"), "INPUT", "cannot read rows", dir);
    // An ENVI file whose data is cut short: GDAL would read the missing rows as zeros.
    testing::writeCube(testing::correlatedCube(300, 200, 6, 2), (dir + "/raw.img").toStdString(),
                       GDT_Int16, "ENVI");
    QVERIFY(QFile::resize(dir + "/raw.img", 300 * 200 * 6 * 2 - 1000));
    expectError(optionsFor(dir + "/raw.img", dir + "/out.tif"), "INPUT", "is truncated", dir);
    // Garbage after a TIFF signature.
    QFile garbage(dir + "/garbage.tif");
    QVERIFY(garbage.open(QIODevice::WriteOnly));
    garbage.write(QByteArray("II*\0", 4) + QByteArray(5000, '\x7f'));
    garbage.close();
    expectError(optionsFor(dir + "/garbage.tif", dir + "/out.tif"), "INPUT", "", dir);
  }

  void badParameters() {
    const QString dir = testing::tempDir();
    const QString input = goodInput(dir);
    PcaOptions options = optionsFor(input, dir + "/out.tif");
    options.bands = {1, 9};
    expectError(options, "BANDS", "band 9 does not exist", dir);
    options.bands = {1, 1};
    expectError(options, "BANDS", "twice", dir);
    options = optionsFor(input, dir + "/out.tif");
    options.components = 5;
    expectError(options, "COMPONENTS", "only 4", dir);
    options = optionsFor(input, dir + "/out.tif");
    options.variancePercent = 0;
    expectError(options, "VARIANCE", "percentage", dir);
    options = optionsFor(input, dir + "/out.tif");
    options.device = "gpu:99";  // no such GPU here, nor on the GPU machine
    expectError(options, "DEVICE", "GPU", dir);
    options.device = "tpu";
    expectError(options, "DEVICE", "unknown device", dir);
    options.device = "gpu:0,x";
    expectError(options, "DEVICE", "not a GPU number", dir);
    options.device = "gpu:1,1";
    expectError(options, "DEVICE", "twice", dir);
    options.device = "gpu:0,98";  // no GPU 98 here, nor on the GPU machines
    expectError(options, "DEVICE", "GPU", dir);
    options = optionsFor(input, dir + "/out.tif");
    options.format = "NoSuchDriver";
    expectError(options, "FORMAT", "unknown", dir);
    options = optionsFor(input, dir + "/out.tif");
    options.ramBytes = 1 << 20;
    expectError(options, "RAM_MB", "at least", dir);
    options = optionsFor(input, dir + "/out.tif");
    options.creationOptions = {"COMPRESS"};
    expectError(options, "CREATION_OPTIONS", "NAME=VALUE", dir);
  }

  void inputNeverTouched() {
    const QString dir = testing::tempDir();
    const QString input = goodInput(dir);
    QFile file(input);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray before = file.readAll();
    file.close();
    const QDateTime modified = QFileInfo(input).lastModified();
    TestFeedback feedback;
    runPca(optionsFor(input, dir + "/out.tif"), feedback);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll(), before);
    QCOMPARE(QFileInfo(input).lastModified(), modified);
    QVERIFY(!QFile::exists(input + ".aux.xml"));
  }

  // The backend starts on a thread of its own while the job opens its input. Without a usable GPU:
  // auto takes the CPU and says why only when the job takes the backend; gpu fails there; a job
  // whose input is bad says nothing about devices.
  void deviceSelectionWithoutAGpu() {
    if (GpuRuntime* runtime = gpuRuntime(nullptr)) {
      try {
        if (runtime->deviceCount() > 0) QSKIP("a GPU is usable here (test_gpu covers it)");
      } catch (const DeviceError&) {
      }
    }
    TestFeedback feedback;
    {
      BackendStart automatic("auto", 0);
      const std::unique_ptr<ComputeBackend> backend = automatic.get(feedback);
      QVERIFY2(QString::fromStdString(backend->name()).startsWith("cpu"), backend->name().c_str());
      QVERIFY2(feedback.infos.join('\n').contains("No usable GPU"),
               qPrintable(feedback.infos.join('\n')));
    }
    try {
      BackendStart gpu("gpu", 0);
      gpu.get(feedback);
      QFAIL("a GPU was requested without one");
    } catch (const Error& error) {
      QCOMPARE(QString::fromStdString(error.parameter()), QString("DEVICE"));
    }
    { BackendStart neverTaken("auto", 0); }  // waits for its thread
    const QString dir = testing::tempDir();
    TestFeedback quiet;
    PcaOptions options = optionsFor(dir + "/none.tif", dir + "/out.tif");
    options.device = "auto";
    try {
      runPca(options, quiet);
      QFAIL("no error");
    } catch (const Error& error) {
      QCOMPARE(QString::fromStdString(error.parameter()), QString("INPUT"));
    }
    QVERIFY2(quiet.infos.isEmpty(), qPrintable(quiet.infos.join('\n')));
  }
};

QTEST_GUILESS_MAIN(ErrorTests)
#include "test_errors.moc"
