// Integration tests: file-to-file MNF against the float64 reference (TestSupport's referenceMnf),
// on generated scenes with spatial structure and nodata holes, every noise direction, and the
// real scenes in ../shared/data.

#include "DeviceOption.h"
#include "TestFeedback.h"
#include "TestSupport.h"
#include "core/Error.h"
#include "pca/PcaJob.h"
#include "run/JobGroup.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>

using namespace hyperstream;

namespace {

struct Direction {
  NoiseDirection direction;
  int rowStep, columnStep;
};
const Direction kDirections[] = {{NoiseDirection::LowerRight, 1, 1},
                                 {NoiseDirection::LowerLeft, 1, -1},
                                 {NoiseDirection::Right, 0, 1},
                                 {NoiseDirection::Lower, 1, 0}};

PcaOptions mnfOptions(const QString& input, const QString& output, NoiseDirection direction) {
  PcaOptions options;
  options.input = input.toStdString();
  options.output = output.toStdString();
  options.device = parseDevice("cpu");
  options.noise = direction;
  options.components = kAllComponents;
  options.outputType = OutputType::Float64;
  return options;
}

// Eigenvalues within 1e-6 relative; components 1 - r <= 1e-9 (same sign) wherever the eigenvalue
// stands apart from its neighbours (elsewhere the vectors are not determined).
void compareWithReference(const testing::Cube& cube, const PcaResult& result,
                          const std::string& output, const Direction& direction) {
  const testing::Reference ref =
      testing::referenceMnf(cube, direction.rowStep, direction.columnStep);
  QCOMPARE(result.model.validPixels, ref.valid);
  const int count = result.model.componentCount();
  QCOMPARE(static_cast<size_t>(count), ref.eigenvalues.size());
  const testing::RelativeErrors eigen =
      testing::relativeErrors(result.model.eigenvalues, ref.eigenvalues, 1e-6, "eigenvalue");
  QVERIFY2(eigen.firstBeyond < 0, eigen.message.c_str());
  double worstComponent = 0;
  const testing::Cube written = testing::readCube(output);
  int compared = 0;
  for (int k = 0; k < result.components; ++k) {
    double gap = INFINITY;
    if (k > 0) gap = std::min(gap, ref.eigenvalues[k - 1] - ref.eigenvalues[k]);
    if (k + 1 < count) gap = std::min(gap, ref.eigenvalues[k] - ref.eigenvalues[k + 1]);
    if (gap < 1e-2 * ref.eigenvalues[k]) continue;
    const double mismatch =
        testing::componentMismatch(written, k, testing::referenceComponent(cube, ref, k));
    if (!(mismatch <= 1e-9))
      QFAIL(qPrintable(QString("component %1: 1 - r = %2").arg(k + 1).arg(mismatch)));
    worstComponent = std::max(worstComponent, mismatch);
    ++compared;
  }
  QVERIFY(compared >= 1);
  qInfo("worst eigenvalue relative error %.2e, worst 1 - r %.2e (%d of %d components apart)",
        eigen.worst, worstComponent, compared, result.components);
}

// Nodata holes: a block, a row and scattered pixels.
void punchHoles(testing::Cube& cube, double nodata) {
  cube.nodata.assign(cube.bands, nodata);
  for (int64_t r = 5; r < 9; ++r)
    for (int64_t c = 3; c < 11; ++c) cube.at(r, c, 0) = nodata;
  for (int64_t c = 0; c < cube.cols; ++c) cube.at(17, c, cube.bands - 1) = nodata;
  for (int64_t p = 7; p < cube.pixels(); p += 37) cube.values[p * cube.bands + 2] = nodata;
}

QJsonObject readJson(const std::string& path) {
  QFile file(QString::fromStdString(path));
  if (!file.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(file.readAll()).object();
}

}  // namespace

class MnfTests : public QObject {
  Q_OBJECT
 private slots:
  void againstReference_data() {
    QTest::addColumn<int>("direction");
    QTest::addColumn<int>("fileType");
    for (int d = 0; d < 4; ++d) {
      const std::string name = noiseDirectionName(kDirections[d].direction);
      for (int type : {GDT_UInt16, GDT_Int16, GDT_Float32, GDT_Float64})
        QTest::newRow((name + " " + GDALGetDataTypeName(GDALDataType(type))).c_str()) << d << type;
    }
  }
  void againstReference() {
    QFETCH(int, direction);
    QFETCH(int, fileType);
    testing::Cube cube = testing::smoothScene(53, 41, 10, 11 + direction);
    const bool integer = fileType != GDT_Float32 && fileType != GDT_Float64;
    if (integer) testing::roundValues(cube);
    if (fileType == GDT_Float32)
      for (double& v : cube.values) v = static_cast<float>(v);
    if (fileType == GDT_Float32) {
      for (int64_t p = 3; p < cube.pixels(); p += 29) cube.values[p * cube.bands + 4] = NAN;
    } else {
      punchHoles(cube, fileType == GDT_Int16 ? -9999 : 0);
    }
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDALDataType(fileType));
    PcaOptions options =
        mnfOptions(dir + "/in.tif", dir + "/out.tif", kDirections[direction].direction);
    options.stripRows = 7;  // pairs straddle strips
    TestFeedback feedback;
    const PcaResult result = runPca(options, feedback);
    QCOMPARE(result.model.transform, Transform::Mnf);
    compareWithReference(cube, result, options.output, kDirections[direction]);
  }

  // 16-bit samples' noise is packed where the differences are made (band-major strips from a
  // band-interleaved file too); rows whose differences spread past the integer kernel's 16 bits
  // (0 next to 60000) take float64 DSYRK. Both against the reference.
  void wideDifferencesAndBandInterleavedFiles() {
    testing::Cube cube = testing::smoothScene(40, 33, 8, 5);
    testing::roundValues(cube);
    for (int64_t r = 10; r < 14; ++r)
      for (int64_t c = 0; c < cube.cols; ++c)
        for (int b = 0; b < cube.bands; ++b) cube.at(r, c, b) = (c + b) % 2 ? 60000 : 0;
    punchHoles(cube, 1);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/pixel.tif").toStdString(), GDT_UInt16);
    testing::writeCube(cube, (dir + "/band.tif").toStdString(), GDT_UInt16, "GTiff",
                       {"INTERLEAVE=BAND"});
    for (const QString name : {"pixel", "band"})
      for (int d = 0; d < 4; ++d) {
        PcaOptions options =
            mnfOptions(dir + "/" + name + ".tif", dir + "/out.tif", kDirections[d].direction);
        options.stripRows = 6;
        TestFeedback feedback;
        const PcaResult result = runPca(options, feedback);
        compareWithReference(cube, result, options.output, kDirections[d]);
      }
  }

  void stripHeightsAndBudgetsGiveTheSameBits_data() {
    QTest::addColumn<int>("fileType");
    QTest::newRow("uint16") << int(GDT_UInt16);
    QTest::newRow("float64") << int(GDT_Float64);
  }
  void stripHeightsAndBudgetsGiveTheSameBits() {
    QFETCH(int, fileType);
    // 1024 pixels wide: one row per statistics group, so any strip height is possible. 20 MB in
    // float64: streamed under 16 MiB.
    testing::Cube cube = testing::smoothScene(300, 1024, 8, 5);
    if (fileType == GDT_UInt16) testing::roundValues(cube);
    punchHoles(cube, 0);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDALDataType(fileType));
    std::vector<double> eigenvalues;
    std::vector<double> written;
    for (int64_t stripRows : {0, 1, 7, 300}) {
      for (int64_t ramMiB : {1024, 16}) {
        PcaOptions options = mnfOptions(dir + "/in.tif", dir + "/out.tif", NoiseDirection::Lower);
        options.stripRows = stripRows;
        options.ramBytes = ramMiB << 20;
        TestFeedback feedback;
        PcaResult result;
        const int64_t growth = testing::peakGrowth([&] { result = runPca(options, feedback); });
        if (!testing::underAddressSanitizer && growth >= 0 && stripRows == 0)
          QVERIFY2(growth <= options.ramBytes + testing::kPeakSlackBytes,
                   qPrintable(QString("peak grew %1 MiB").arg(growth >> 20)));
        const std::vector<double> values = testing::readCube(options.output).values;
        if (eigenvalues.empty()) {
          eigenvalues = result.model.eigenvalues;
          written = values;
          continue;
        }
        QCOMPARE(result.model.eigenvalues, eigenvalues);
        QVERIFY2(values == written,
                 qPrintable(QString("strips of %1 rows, %2 MiB").arg(stripRows).arg(ramMiB)));
      }
    }
  }

  // Workers of one process sharing the job (what several GPUs and MPI ranks do): each reads the
  // row above its own, so the pairs across their boundaries count as in one worker.
  void workersShareOneJob() {
    testing::Cube cube = testing::smoothScene(61, 37, 9, 21);
    testing::roundValues(cube);
    punchHoles(cube, 0);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_UInt16);
    PcaOptions options = mnfOptions(dir + "/in.tif", dir + "/one.tif", NoiseDirection::LowerLeft);
    options.stripRows = 4;
    options.creationOptions = {"COMPRESS=DEFLATE"};
    TestFeedback feedback;
    const PcaResult one = runPca(options, feedback);
    options.output = (dir + "/shared.tif").toStdString();
    PcaResult shared;
    ThreadGroup threads(3);
    threads.run([&](JobGroup& group) {
      TestFeedback mine;
      PcaResult result = runPca(options, mine, group);
      if (group.rank() == 0) shared = result;
    });
    for (size_t i = 0; i < one.model.eigenvalues.size(); ++i)
      QVERIFY(std::abs(shared.model.eigenvalues[i] - one.model.eigenvalues[i]) <=
              1e-12 * one.model.eigenvalues[0]);
    compareWithReference(cube, shared, options.output, kDirections[1]);
  }

  void singularNoiseNamesTheBands() {
    testing::Cube cube = testing::smoothScene(30, 20, 6, 3);
    for (int64_t p = 0; p < cube.pixels(); ++p)
      cube.values[p * 6 + 4] = cube.values[p * 6 + 2];  // band 5 = band 3
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float64);
    TestFeedback feedback;
    try {
      runPca(mnfOptions(dir + "/in.tif", dir + "/out.tif", NoiseDirection::LowerRight), feedback);
      QFAIL("identical bands, but the MNF ran");
    } catch (const Error& e) {
      QCOMPARE(QString::fromStdString(e.parameter()), QString("BANDS"));
      QVERIFY2(QString(e.what()).contains("band number 5 is that of band number 3"), e.what());
    }
    QCOMPARE(testing::filesIn(dir), QStringList({"in.tif"}));
  }

  void componentsBySnrAndReports() {
    testing::Cube cube = testing::smoothScene(45, 33, 12, 8);
    testing::roundValues(cube);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_UInt16);
    PcaOptions options = mnfOptions(dir + "/in.tif", dir + "/out.tif", NoiseDirection::Right);
    options.components = 0;
    options.minSnr = 5.0;
    options.statsJson = (dir + "/stats.json").toStdString();
    options.tableCsv = (dir + "/table.csv").toStdString();
    options.htmlReport = (dir + "/report.html").toStdString();
    TestFeedback feedback;
    const PcaResult result = runPca(options, feedback);
    const testing::Reference ref = testing::referenceMnf(cube, 0, 1);
    int expected = 0;
    while (expected < 12 && ref.eigenvalues[expected] - 1 >= 5.0) ++expected;
    QVERIFY(expected >= 1 && expected < 12);
    QCOMPARE(result.components, expected);
    QCOMPARE(testing::readCube(options.output).bands, expected);

    const QJsonObject stats = readJson(options.statsJson);
    QCOMPARE(stats["transform"].toString(), QString("mnf"));
    QCOMPARE(stats["noise_direction"].toString(), QString("right"));
    QCOMPARE(stats["snr"].toArray()[0].toDouble(), result.model.eigenvalues[0] - 1);
    int64_t pairs = 0;
    const std::vector<double> noise = testing::referenceNoiseCovariance(cube, 0, 1, pairs);
    const QJsonArray noiseStddev = stats["noise_stddev"].toArray();
    QCOMPARE(noiseStddev.size(), 12);
    for (int b = 0; b < 12; ++b)
      QVERIFY(std::abs(noiseStddev[b].toDouble() / std::sqrt(noise[b * 12 + b]) - 1) < 1e-9);
    QFile csv(QString::fromStdString(options.tableCsv));
    QVERIFY(csv.open(QIODevice::ReadOnly));
    QVERIFY(csv.readLine().startsWith("component,eigenvalue,snr,"));
    QVERIFY(csv.readLine().startsWith("MNF1,"));
    QFile html(QString::fromStdString(options.htmlReport));
    QVERIFY(html.open(QIODevice::ReadOnly));
    const QString page = html.readAll();
    QVERIFY(page.contains("Minimum noise fraction") && page.contains("noise std. dev."));

    // By the share of the summed SNR.
    options.minSnr.reset();
    options.variancePercent = 90;
    const PcaResult byShare = runPca(options, feedback);
    double total = 0, upTo = 0;
    for (double v : ref.eigenvalues) total += std::max(0.0, v - 1);  // a negative SNR counts 0
    int needed = 0;
    while (100 * upTo < 90 * total) upTo += std::max(0.0, ref.eigenvalues[needed++] - 1);
    QCOMPARE(byShare.components, needed);
  }

  void jasperRidgeAndSamson() {
    const QString data = testing::sharedDataDir();
    if (data.isEmpty()) QSKIP("../shared/data is absent: the real-scene test needs its cubes");
    const QString dir = testing::tempDir();
    struct Scene {
      const char* file;
      int direction;
      int64_t valid;
    };
    for (const Scene& scene : {Scene{"jasper_ridge_100x100x198_uint16.tif", 0, 10000},
                               Scene{"jasper_ridge_nodata65535.tif", 3, 8000},
                               Scene{"samson_95x95x156_float64.tif", 2, 9025},
                               Scene{"moffett_50x50x189_float64.tif", 1, 2500}}) {
      const QString input = data + "/" + scene.file;
      PcaOptions options =
          mnfOptions(input, dir + "/" + scene.file, kDirections[scene.direction].direction);
      options.components = 12;
      TestFeedback feedback;
      const PcaResult result = runPca(options, feedback);
      QCOMPARE(result.model.validPixels, scene.valid);
      compareWithReference(testing::readCube(input.toStdString()), result, options.output,
                           kDirections[scene.direction]);
    }
    // The band-interleaved copy gives the same bits.
    PcaOptions tif = mnfOptions(data + "/jasper_ridge_100x100x198_uint16.tif", dir + "/a.tif",
                                NoiseDirection::LowerRight);
    PcaOptions bsq = mnfOptions(data + "/jasper_ridge_100x100x198_uint16.bsq", dir + "/b.tif",
                                NoiseDirection::LowerRight);
    tif.stripRows = bsq.stripRows = 9;
    TestFeedback feedback;
    QCOMPARE(runPca(bsq, feedback).model.eigenvalues, runPca(tif, feedback).model.eigenvalues);
    QCOMPARE(testing::readCube(bsq.output).values, testing::readCube(tif.output).values);
  }
};

QTEST_GUILESS_MAIN(MnfTests)
#include "test_mnf.moc"
