// Integration tests: bad input gives a clear error naming the parameter, and leaves no file.

#include "DeviceOption.h"
#include "TestFeedback.h"
#include "TestSupport.h"
#include "core/Error.h"
#include "io/PendingRaster.h"
#include "pca/PcaJob.h"
#include "projection/PcaKernels.h"
#include "run/DeviceSelection.h"
#include "spp/SppJob.h"

#include <QCoreApplication>
#include <QFile>
#include <QProcess>
#include <QtTest>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <functional>

using namespace hyperstream;

namespace {

const KernelMaker<PcaKernels> kPcaKernels{makeCpuPcaKernels, &GpuRuntime::createPcaKernels};

// Runs `job`, expecting an Error about `parameter` whose message contains `words`; checks that
// the folder holds exactly the files it held before.
void expectJobError(const std::function<void()>& job, const QString& parameter,
                    const QString& words, const QString& folder) {
  QStringList before = testing::filesIn(folder);
  before.sort();
  try {
    job();
    QFAIL("no error");
  } catch (const Error& error) {
    QCOMPARE(QString::fromStdString(error.parameter()), parameter);
    QVERIFY2(QString(error.what()).contains(words, Qt::CaseInsensitive), error.what());
  }
  QStringList after = testing::filesIn(folder);
  after.sort();
  QCOMPARE(after, before);
}

// expectJobError for a PCA.
void expectError(const PcaOptions& options, const QString& parameter, const QString& words,
                 const QString& folder) {
  TestFeedback feedback;
  expectJobError([&] { runPca(options, feedback); }, parameter, words, folder);
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

QByteArray contents(const QString& path) {
  QFile file(path);
  return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

void writeText(const QString& path, const QByteArray& text) {
  QFile file(path);
  QVERIFY(file.open(QIODevice::WriteOnly));
  file.write(text);
}

// A VRT stacking a one-band file of `firstType` and the bands of `rest` (Float32): bands whose
// types differ, as a VRT or a multi-type format can have.
QString mixedTypeVrt(const QString& dir, GDALDataType firstType, const testing::Cube& rest) {
  testing::Cube first = testing::correlatedCube(rest.rows, rest.cols, 1, 9, 100.0, 20.0);
  testing::roundValues(first);
  testing::writeCube(first, (dir + "/first.tif").toStdString(), firstType);
  testing::writeCube(rest, (dir + "/rest.tif").toStdString(), GDT_Float32);
  QString vrt =
      QString("<VRTDataset rasterXSize=\"%1\" rasterYSize=\"%2\">\n").arg(rest.cols).arg(rest.rows);
  for (int b = 0; b <= rest.bands; ++b)
    vrt += QString(
               "<VRTRasterBand dataType=\"%1\" band=\"%2\"><SimpleSource>"
               "<SourceFilename relativeToVRT=\"1\">%3</SourceFilename>"
               "<SourceBand>%4</SourceBand></SimpleSource></VRTRasterBand>\n")
               .arg(b == 0 ? GDALGetDataTypeName(firstType) : "Float32")
               .arg(b + 1)
               .arg(b == 0 ? "first.tif" : "rest.tif")
               .arg(b == 0 ? 1 : b);
  vrt += "</VRTDataset>\n";
  writeText(dir + "/mixed.vrt", vrt.toUtf8());
  return dir + "/mixed.vrt";
}

// Bytes this process has written through write() and friends (Linux /proc/self/io).
int64_t bytesWritten() {
  QFile io("/proc/self/io");
  if (!io.open(QIODevice::ReadOnly)) return -1;
  for (const QByteArray& line : io.readAll().split('\n'))
    if (line.startsWith("wchar:")) return line.mid(6).trimmed().toLongLong();
  return -1;
}

// Cancels after its first `checks` questions.
class CancelAfter : public Feedback {
 public:
  explicit CancelAfter(int checks) : left_(checks) {}
  void setProgress(double) override {}
  void log(Level, const QString&) override {}
  bool isCanceled() const override { return left_-- <= 0; }

 private:
  mutable std::atomic<int> left_;
};

// A process id that no process has any more.
int64_t deadProcessId() {
  QProcess process;
  process.start("true", QStringList());
  process.waitForFinished();
  return process.processId() > 0 ? process.processId() : 999999;
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
    expectError(optionsFor(input, input), "OUTPUT", "read by this run (INPUT)", dir);
    expectError(optionsFor(input, dir + "/./good.tif"), "OUTPUT", "read by this run (INPUT)", dir);
    // ENVI: the header is one of the input's files too.
    testing::writeCube(testing::correlatedCube(5, 5, 3, 1), (dir + "/e.bsq").toStdString(),
                       GDT_Int16, "ENVI");
    PcaOptions options = optionsFor(dir + "/e.bsq", dir + "/e.hdr");
    expectError(options, "OUTPUT", "read by this run (INPUT)", dir);
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
    options.device = parseDevice("gpu:99");  // no such GPU here, nor on the GPU machine
    expectError(options, "DEVICE", "GPU", dir);
    // Device texts are parsed where the user gives them (CLI, QGIS), before any job.
    const std::pair<const char*, const char*> badDevices[] = {{"tpu", "unknown device"},
                                                              {"gpu:", "unknown device"},
                                                              {"gpu:0,x", "not a GPU number"},
                                                              {"gpu:-1", "not a GPU number"},
                                                              {"gpu:1,1", "twice"}};
    for (const auto& [text, message] : badDevices) {
      try {
        parseDevice(text);
        QFAIL(text);
      } catch (const Error& error) {
        QCOMPARE(QString::fromStdString(error.parameter()), QString("DEVICE"));
        QVERIFY2(QString(error.what()).contains(message), error.what());
      }
    }
    QCOMPARE(parseDevice("gpu:2,0").text(), std::string("gpu:2,0"));
    QVERIFY(parseDevice("gpu:all").severalGpus());
    QVERIFY(!parseDevice("gpu:3").severalGpus());
    options.device = parseDevice("gpu:0,98");  // no GPU 98 here, nor on the GPU machines
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

  // Every file an output takes, sidecars included, is checked against the input's files and
  // what exists there: an ENVI output once replaced the ENVI input's header.
  void outputsNeverReplaceAnotherFile() {
    const QString dir = testing::tempDir();
    testing::writeCube(testing::correlatedCube(20, 15, 4, 3), (dir + "/a.img").toStdString(),
                       GDT_Int16, "ENVI");
    const QByteArray header = contents(dir + "/a.hdr");
    PcaOptions options = optionsFor(dir + "/a.img", dir + "/a.bin");
    options.format = "ENVI";
    expectError(options, "OUTPUT", "read by this run (INPUT)", dir);
    QCOMPARE(contents(dir + "/a.hdr"), header);
    // A header of something else beside the destination.
    writeText(dir + "/b.hdr", "not ours\n");
    options.output = (dir + "/b.bin").toStdString();
    expectError(options, "OUTPUT", "not part of", dir);
    QCOMPARE(contents(dir + "/b.hdr"), QByteArray("not ours\n"));
    // A VRT's sources are its files too.
    const QString vrt = mixedTypeVrt(dir, GDT_UInt16, testing::correlatedCube(20, 15, 3, 4));
    expectError(optionsFor(vrt, dir + "/rest.tif"), "OUTPUT", "read by this run (INPUT)", dir);
    // The reports' sidecars of other outputs are theirs.
    options = optionsFor(vrt, dir + "/c.bin");
    options.format = "ENVI";
    options.tableCsv = (dir + "/c.hdr").toStdString();
    expectError(options, "OUTPUT_TABLE", "another output", dir);
  }

  // Replacing an earlier result replaces its sidecars too: an old .aux.xml (statistics QGIS
  // wrote for the earlier file) or .hdr would describe the new one wrongly.
  void replacingAnOutputReplacesItsSidecars() {
    const QString dir = testing::tempDir();
    const QString input = goodInput(dir);
    PcaOptions options = optionsFor(input, dir + "/c.bin");
    options.format = "ENVI";
    options.components = 1;
    TestFeedback feedback;
    runPca(options, feedback);
    QVERIFY(contents(dir + "/c.hdr").contains("bands   = 1"));
    QVERIFY2(!contents(dir + "/c.hdr").contains(".part"), contents(dir + "/c.hdr").constData());
    options.components = 2;
    runPca(options, feedback);
    QVERIFY(contents(dir + "/c.hdr").contains("bands   = 2"));
    writeText(dir + "/out.tif", "an earlier result");
    writeText(dir + "/out.tif.aux.xml",
              "<PAMDataset><Metadata><MDI key=\"STATISTICS_MEAN\">"
              "42</MDI></Metadata></PAMDataset>");
    runPca(optionsFor(input, dir + "/out.tif"), feedback);
    QVERIFY(!QFile::exists(dir + "/out.tif.aux.xml"));
    QStringList files = testing::filesIn(dir);
    files.sort();
    QCOMPARE(files, QStringList({"c.bin", "c.bin.aux.xml", "c.hdr", "good.tif", "out.tif"}));
  }

  // Outputs are only ever regular files: a FIFO, or a link to a device, is refused (as root,
  // --stats /dev/null once replaced /dev/null with a file).
  void outputsAreRegularFiles() {
    const QString dir = testing::tempDir();
    const QString input = goodInput(dir);
    QVERIFY(mkfifo((dir + "/fifo").toLocal8Bit().constData(), 0600) == 0);
    QVERIFY(QFile::link("/dev/null", dir + "/null"));
    PcaOptions options = optionsFor(input, dir + "/out.tif");
    options.statsJson = (dir + "/fifo").toStdString();
    expectError(options, "OUTPUT_STATS", "not a regular file", dir);
    options.statsJson.clear();
    options.tableCsv = (dir + "/null").toStdString();
    struct stat device {};
    if (stat("/dev/null", &device) == 0 && S_ISCHR(device.st_mode))  // not so in some chroots
      expectError(options, "OUTPUT_TABLE", "not a regular file", dir);
    else
      qInfo("/dev/null is not a device here: the link to it is not checked");
    expectError(optionsFor(input, dir + "/fifo"), "OUTPUT", "not a regular file", dir);
    QVERIFY(QFileInfo(dir + "/null").isSymLink());
    struct stat status {};
    QVERIFY(stat((dir + "/fifo").toLocal8Bit().constData(), &status) == 0 &&
            S_ISFIFO(status.st_mode));
  }

  // Bands are read in a type that holds every selected band: a VRT whose band 1 is UInt16 and
  // whose other bands are Float32 reflectances had them read as integers (means 0.019 for 0.30).
  void bandsOfMixedTypes() {
    const QString dir = testing::tempDir();
    testing::Cube reflectance = testing::correlatedCube(30, 25, 6, 11, 0.3, 0.02);
    const QString vrt = mixedTypeVrt(dir, GDT_UInt16, reflectance);
    reflectance = testing::readCube((dir + "/rest.tif").toStdString());  // as Float32 stored them
    const testing::Reference reference = testing::referencePca(reflectance);
    for (GDALDataType first : {GDT_UInt16, GDT_Byte}) {
      mixedTypeVrt(dir, first, reflectance);
      PcaOptions options = optionsFor(vrt, dir + "/pcs.tif");
      options.bands = {{2, 7}};
      options.components = kAllComponents;
      TestFeedback feedback;
      const PcaResult result = runPca(options, feedback);
      QCOMPARE(result.model.componentCount(), 6);
      QVERIFY2(testing::maxRelativeDifference(result.model.mean, reference.mean) < 1e-9,
               qPrintable(QString::number(result.model.mean[0]) + " for " +
                          QString::number(reference.mean[0])));
      QVERIFY2(
          testing::maxRelativeDifference(result.model.eigenvalues, reference.eigenvalues) < 1e-6,
          qPrintable(QString::number(
              testing::maxRelativeDifference(result.model.eigenvalues, reference.eigenvalues))));
      // With every band: UInt16 and Float32 read as Float32 (exact for both).
      options.bands.clear();
      QCOMPARE(runPca(options, feedback).model.componentCount(), 7);
    }
  }

  // What cannot be written is found before any work: a VRT output (GDAL cannot write its pixels)
  // and creation options that are not NAME=VALUE, unknown, or of a wrong value.
  void outputsThatCannotBeWrittenFailFirst() {
    const QString dir = testing::tempDir();
    const QString input = goodInput(dir);
    struct Case {
      QString output;
      std::vector<std::string> creationOptions;
      QString parameter, words;
    };
    const QList<Case> cases = {
        {"out.vrt", {}, "OUTPUT", "cannot write the pixels"},
        {"out.tif", {"NOTANOPTION"}, "CREATION_OPTIONS", "NAME=VALUE"},
        {"out.tif", {"COMPRESS=BOGUS"}, "CREATION_OPTIONS", "BOGUS"},
        {"out.tif", {"FOO=BAR"}, "CREATION_OPTIONS", "FOO"},
    };
    for (const Case& c : cases) {
      PcaOptions options = optionsFor(input, dir + "/" + c.output);
      options.creationOptions = c.creationOptions;
      TestFeedback feedback;
      try {
        runPca(options, feedback);
        QFAIL(qPrintable("no error for " + c.output));
      } catch (const Error& error) {
        QCOMPARE(QString::fromStdString(error.parameter()), c.parameter);
        QVERIFY2(QString(error.what()).contains(c.words), error.what());
      }
      QCOMPARE(feedback.lastProgress(), 0.0);  // before pass 1 began
      QVERIFY2(feedback.warnings.isEmpty(), qPrintable(feedback.warnings.join('\n')));
    }
    QCOMPARE(testing::filesIn(dir), QStringList{"good.tif"});
  }

  // Values near float64's limit: their variance overflows (once "LAPACK dsyevr info -6", or
  // whole bands of infinities); components beyond Float32's range need Float64.
  void hugeValues() {
    const QString dir = testing::tempDir();
    testing::Cube cube = testing::correlatedCube(20, 20, 4, 7);
    testing::Cube spike = cube;
    spike.at(3, 4, 2) = 1e300;
    testing::writeCube(spike, (dir + "/spike.tif").toStdString(), GDT_Float64);
    expectError(optionsFor(dir + "/spike.tif", dir + "/out.tif"), "INPUT", "too large", dir);
    spike.at(5, 5, 2) = -1e300;
    testing::writeCube(spike, (dir + "/spike.tif").toStdString(), GDT_Float64);
    expectError(optionsFor(dir + "/spike.tif", dir + "/out.tif"), "INPUT", "too large", dir);
    testing::Cube large = cube;
    for (double& v : large.values) v *= 1e96;
    testing::writeCube(large, (dir + "/large.tif").toStdString(), GDT_Float64);
    expectError(optionsFor(dir + "/large.tif", dir + "/out.tif"), "OUTPUT_TYPE", "Float64", dir);
    PcaOptions options = optionsFor(dir + "/large.tif", dir + "/out.tif");
    options.outputType = OutputType::Float64;
    options.components = kAllComponents;
    TestFeedback feedback;
    const PcaResult result = runPca(options, feedback);
    // The reference in float64 squares the values itself: it runs on the unscaled cube.
    std::vector<double> expected = testing::referencePca(cube).eigenvalues;
    for (double& e : expected) e *= 1e192;
    QVERIFY2(testing::maxRelativeDifference(result.model.eigenvalues, expected) < 1e-6,
             qPrintable(QString::number(
                 testing::maxRelativeDifference(result.model.eigenvalues, expected))));
    const testing::Cube written = testing::readCube(options.output);
    for (double v : written.values) QVERIFY(std::isfinite(v));
    // SPP: a Float32 output cannot hold the displaced spike; Float64 can.
    SppOptions spp;
    spp.input = (dir + "/spike.tif").toStdString();
    spp.output = (dir + "/spp.tif").toStdString();
    expectJobError([&] { runSpp(spp, feedback); }, "OUTPUT_TYPE", "Float64", dir);
    spp.outputType = OutputType::Float64;
    runSpp(spp, feedback);
    for (double v : testing::readCube(spp.output).values) QVERIFY(std::isfinite(v));
    // Sums that overflow float64.
    testing::Cube overflow = cube;
    for (int64_t p = 0; p < 30; ++p) overflow.values[static_cast<size_t>(p) * 4] = 1e307;
    testing::writeCube(overflow, (dir + "/overflow.tif").toStdString(), GDT_Float64);
    spp.input = (dir + "/overflow.tif").toStdString();
    spp.output = (dir + "/spp2.tif").toStdString();
    expectJobError([&] { runSpp(spp, feedback); }, "INPUT", "too large", dir);
  }

  // A canceled or failed output is deleted without being filled first: closing a GeoTIFF with
  // a nodata value wrote every missing block (a second for gigabytes) before it was deleted.
  void discardedOutputsAreNotFilled() {
    if (bytesWritten() < 0) QSKIP("no /proc/self/io here");
    const QString dir = testing::tempDir();
    const std::string path = (dir + "/out.tif").toStdString();
    const int64_t width = 2000, height = 500, bands = 50;  // 200 MB of Float32
    int64_t written = 0;
    {
      PendingRaster raster(path, RasterFormat{outputDriver(path, ""), {}}, width, height, bands,
                           GDT_Float32);
      for (int b = 1; b <= bands; ++b) raster.dataset().GetRasterBand(b)->SetNoDataValue(-9999);
      const std::vector<float> strip(static_cast<size_t>(width * bands * 10), 1.0f);
      writeStrip(raster.dataset(), GDT_Float32, 0, 10, strip.data(), SilentFeedback());
      written = bytesWritten();
    }
    const int64_t atDiscard = bytesWritten() - written;
    qInfo("%lld bytes written when discarding a 200 MB raster", static_cast<long long>(atDiscard));
    QVERIFY(atDiscard < (1 << 20));
    QCOMPARE(testing::filesIn(dir), QStringList());
  }

  // A strip is written a few megabytes at a time, with cancel looked at between the parts: a
  // cancel no longer waits for a strip of hundreds of megabytes to reach the disk.
  void writingAStripStopsOnCancel() {
    const QString dir = testing::tempDir();
    const std::string path = (dir + "/out.tif").toStdString();
    const int64_t width = 1000, rows = 200, bands = 50;  // 40 MB, 200 rows of 200 kB
    PendingRaster raster(path, RasterFormat{outputDriver(path, ""), {}}, width, rows, bands,
                         GDT_Float32);
    const std::vector<float> strip(static_cast<size_t>(width * rows * bands), 1.0f);
    CancelAfter twoParts(2);
    QVERIFY_EXCEPTION_THROWN(
        writeStrip(raster.dataset(), GDT_Float32, 0, rows, strip.data(), twoParts), Canceled);
    // Two parts of 8 MiB were written, not the whole strip.
    std::vector<float> row(static_cast<size_t>(width * bands));
    QVERIFY(
        raster.dataset().RasterIO(GF_Read, 0, static_cast<int>(rows - 1), static_cast<int>(width),
                                  1, row.data(), static_cast<int>(width), 1, GDT_Float32,
                                  static_cast<int>(bands), nullptr, 0, 0, 0, nullptr) == CE_None);
    QCOMPARE(row[0], 0.0f);
  }

  // Partial outputs that a killed process left (SIGKILL, a crash) are removed by the next run
  // that writes into that folder; those of running processes or other machines stay.
  void partialOutputsOfDeadProcessesAreRemoved() {
    const QString dir = testing::tempDir();
    const QString input = goodInput(dir);
    const QString host = QString::fromStdString(PendingRaster::hostTag());
    const QString dead = QString(".out.tif.part-%1-%2-0123abcd").arg(host).arg(deadProcessId());
    const QString alive = QString(".out.tif.part-%1-1-0123abcd").arg(host);
    const QString elsewhere = QString(".x.tif.part-otherhost-%1-0123abcd").arg(deadProcessId());
    for (const QString& name : {dead, alive, elsewhere}) {
      QVERIFY(QDir(dir).mkdir(name));
      writeText(dir + "/" + name + "/out.tif", QByteArray(1000, 'x'));
    }
    TestFeedback feedback;
    runPca(optionsFor(input, dir + "/out.tif"), feedback);
    QVERIFY(!QFileInfo::exists(dir + "/" + dead));
    QVERIFY(QFileInfo::exists(dir + "/" + alive) && QFileInfo::exists(dir + "/" + elsewhere));
    QVERIFY2(feedback.infos.join('\n').contains("Removed '" + dir + "/" + dead),
             qPrintable(feedback.infos.join('\n')));
  }

  // GDAL out of memory in a read says so ("GetBlockRef failed" blamed the file): the reads and
  // writes look at what QuietGdalErrors noticed.
  void gdalOutOfMemoryIsNoticed() {
    QuietGdalErrors quiet;
    QVERIFY(!quiet.outOfMemory());
    CPLError(CE_Failure, CPLE_AppDefined, "GetBlockRef failed");
    QVERIFY(!quiet.outOfMemory());
    {
      QuietGdalErrors inner;
      CPLError(CE_Failure, CPLE_OutOfMemory, "Out of memory allocating 1 bytes");
      QVERIFY(inner.outOfMemory());
    }
    CPLError(CE_Failure, CPLE_OutOfMemory, "Out of memory allocating 2 bytes");
    QVERIFY(quiet.outOfMemory());
  }

  // Whatever escapes a job becomes an error naming the parameter: out of memory the RAM budget.
  void unexpectedExceptionsBecomeErrors() {
    auto convert = [](const std::function<void()>& fail) -> Error {
      try {
        try {
          fail();
        } catch (...) {
          rethrowAsJobError(int64_t{512} << 20);
        }
      } catch (const Error& error) {
        return error;
      }
      return Error("none", "nothing thrown");
    };
    Error memory = convert([] { throw std::bad_alloc(); });
    QCOMPARE(QString::fromStdString(memory.parameter()), QString("RAM_MB"));
    QVERIFY2(QString(memory.what()).contains("512 MiB"), memory.what());
    Error other = convert([] { throw std::out_of_range("vector::at"); });
    QCOMPARE(QString::fromStdString(other.parameter()), QString());
    QVERIFY2(QString(other.what()).contains("vector::at"), other.what());
    Error kept = convert([] { throw Error("BANDS", "as it was"); });
    QCOMPARE(QString::fromStdString(kept.parameter()), QString("BANDS"));
    QVERIFY_EXCEPTION_THROWN(convert([] { throw Canceled(); }), Canceled);
  }

  // Band ranges are checked before they are expanded: "1-2000000000" took 15.8 GB and minutes.
  void hugeBandRanges() {
    const QString dir = testing::tempDir();
    PcaOptions options = optionsFor(goodInput(dir), dir + "/out.tif");
    QElapsedTimer timer;
    timer.start();
    options.bands = {{1, 2000000000}};
    expectError(options, "BANDS", "band 2000000000 does not exist", dir);
    options.bands = {{1, 2147483647}};
    expectError(options, "BANDS", "does not exist", dir);
    options.bands = {{3, 2}};
    expectError(options, "BANDS", "backwards", dir);
    options.bands = {{1, 3}, 2};
    expectError(options, "BANDS", "band 2 is selected twice", dir);
    QVERIFY(timer.elapsed() < 5000);
  }

  // Bands left out by wavelength (nm, or micrometres converted) and by ENVI's bad-band list give
  // the run of the bands that remain, exactly; asking for what the file lacks is an error naming
  // the parameter.
  void bandsLeftOutByWavelengthAndBadBandList() {
    const QString dir = testing::tempDir();
    const testing::Cube cube = testing::correlatedCube(24, 20, 10, 5);
    const std::string envi = (dir + "/scene.img").toStdString();
    testing::writeCube(cube, envi, GDT_Float32, "ENVI");
    {
      GDALDatasetUniquePtr dataset(GDALDataset::Open(envi.c_str(), GDAL_OF_UPDATE));
      for (int b = 1; b <= 10; ++b) {
        dataset->GetRasterBand(b)->SetMetadataItem("wavelength",
                                                   std::to_string(300 + 100 * b).c_str());
        dataset->GetRasterBand(b)->SetMetadataItem("wavelength_units", "Nanometers");
      }
    }
    QFile header(dir + "/scene.hdr");
    QVERIFY(header.open(QIODevice::Append));
    header.write("bbl = {1, 1, 1, 1, 1, 1, 1, 1, 0, 1}\n");
    header.close();
    TestFeedback feedback;
    PcaOptions options = optionsFor(dir + "/scene.img", dir + "/excluded.tif");
    options.exclude.nanometres = {{550, 750}, {2000, 2500}};  // 600 and 700 nm: bands 3 and 4
    options.exclude.badBandList = true;                       // band 9
    const PcaResult excluded = runPca(options, feedback);
    QCOMPARE(excluded.bands, (std::vector<int>{1, 2, 5, 6, 7, 8, 10}));
    PcaOptions listed = optionsFor(dir + "/scene.img", dir + "/listed.tif");
    listed.bands = {{1, 2}, {5, 8}, 10};
    const PcaResult explicitly = runPca(listed, feedback);
    QCOMPARE(excluded.model.eigenvalues, explicitly.model.eigenvalues);
    QCOMPARE(contents(dir + "/excluded.tif").size(), contents(dir + "/listed.tif").size());
    QVERIFY(testing::readCube((dir + "/excluded.tif").toStdString()).values ==
            testing::readCube((dir + "/listed.tif").toStdString()).values);

    // Micrometres (a GeoTIFF's metadata) are converted.
    const std::string tif = (dir + "/um.tif").toStdString();
    testing::writeCube(cube, tif, GDT_Float32);
    {
      GDALDatasetUniquePtr dataset(GDALDataset::Open(tif.c_str(), GDAL_OF_UPDATE));
      for (int b = 1; b <= 10; ++b) {
        dataset->GetRasterBand(b)->SetMetadataItem("wavelength",
                                                   std::to_string(0.3 + 0.1 * b).c_str());
        dataset->GetRasterBand(b)->SetMetadataItem("wavelength_units", "Micrometers");
      }
    }
    options = optionsFor(dir + "/um.tif", dir + "/um_out.tif");
    options.exclude.nanometres = {{550, 750}};
    QCOMPARE(runPca(options, feedback).bands, (std::vector<int>{1, 2, 5, 6, 7, 8, 9, 10}));

    // What the file does not have, and exclusions that leave too little.
    options = optionsFor(goodInput(dir), dir + "/out.tif");
    options.exclude.nanometres = {{550, 750}};
    expectError(options, "EXCLUDE_NM", "has no wavelength", dir);
    options.exclude = {};
    options.exclude.badBandList = true;
    expectError(options, "USE_BBL", "no bad-band list", dir);
    options = optionsFor(dir + "/scene.img", dir + "/out.tif");
    options.exclude.nanometres = {{0, 1250}};
    expectError(options, "EXCLUDE_NM", "leave 1 band(s)", dir);
  }

  // The kernels start on a thread of its own while the job plans. Without a usable GPU: auto
  // takes the CPU and says why only when the job takes the kernels; gpu fails there; a job whose
  // input is bad says nothing about devices.
  void deviceSelectionWithoutAGpu() {
    if (GpuRuntime* runtime = gpuRuntime(nullptr)) {
      try {
        if (runtime->deviceCount() > 0) QSKIP("a GPU is usable here (test_gpu covers it)");
      } catch (const DeviceError&) {
      }
    }
    TestFeedback feedback;
    {
      KernelStart<PcaKernels> automatic(DeviceChoice(), 0, kPcaKernels);
      automatic.weigh(JobWork{int64_t{1} << 40});
      const std::unique_ptr<PcaKernels> backend = automatic.get(feedback);
      QVERIFY2(QString::fromStdString(backend->name()).startsWith("cpu"), backend->name().c_str());
      QVERIFY2(feedback.infos.join('\n').contains("No usable GPU"),
               qPrintable(feedback.infos.join('\n')));
    }
    try {
      KernelStart<PcaKernels> gpu(DeviceChoice::anyGpu(), 0, kPcaKernels);
      gpu.get(feedback);
      QFAIL("a GPU was requested without one");
    } catch (const Error& error) {
      QCOMPARE(QString::fromStdString(error.parameter()), QString("DEVICE"));
    }
    { KernelStart<PcaKernels> neverTaken(DeviceChoice::anyGpu(), 0, kPcaKernels); }  // waits
    {
      // auto with a small job: the CPU, without looking for a driver
      KernelStart<PcaKernels> small(DeviceChoice(), 0, kPcaKernels);
      small.weigh(JobWork{1 << 20});
      TestFeedback said;
      QVERIFY(QString::fromStdString(small.get(said)->name()).startsWith("cpu"));
      QVERIFY2(said.infos.join('\n').contains("Device auto: the CPU"),
               qPrintable(said.infos.join('\n')));
    }
    const QString dir = testing::tempDir();
    TestFeedback quiet;
    PcaOptions options = optionsFor(dir + "/none.tif", dir + "/out.tif");
    options.device = parseDevice("auto");
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
