// Integration tests: file-to-file PCA against the float64 reference, on generated cubes and the
// real scenes in ../shared/data.

#include "DeviceOption.h"
#include "TestFeedback.h"
#include "TestSupport.h"
#include "core/Error.h"
#include "pca/PcaJob.h"
#include "run/JobGroup.h"
#include "synth/Synth.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>
#include <random>

using namespace hyperstream;

namespace {

PcaOptions optionsFor(const QString& input, const QString& output) {
  PcaOptions options;
  options.input = input.toStdString();
  options.output = output.toStdString();
  options.device =
      parseDevice("cpu");  // the CPU backend's own properties (bitwise equalities); GPU: test_gpu
  return options;
}

// Checks eigenvalues (1e-6 relative) and the written components (1 - r <= 1e-9, same sign).
void compareWithReference(const testing::Cube& cube, const PcaResult& result,
                          const std::string& output, bool correlationMatrix = false) {
  const testing::Reference ref = testing::referencePca(cube, correlationMatrix);
  QCOMPARE(result.model.validPixels, ref.valid);
  QCOMPARE(static_cast<size_t>(result.model.componentCount()), ref.eigenvalues.size());
  const testing::RelativeErrors eigen =
      testing::relativeErrors(result.model.eigenvalues, ref.eigenvalues, 1e-6, "eigenvalue");
  QVERIFY2(eigen.firstBeyond < 0, eigen.message.c_str());
  double worstComponent = 0;
  const testing::Cube written = testing::readCube(output);
  QCOMPARE(written.bands, result.components);
  for (int k = 0; k < result.components; ++k) {
    // 1 - r; 2 where nodata is not written exactly where pixels are invalid.
    const double mismatch = testing::componentMismatch(
        written, k, testing::referenceComponent(cube, ref, k, correlationMatrix));
    if (!(mismatch <= 1e-9))
      QFAIL(qPrintable(QString("component %1: 1 - r = %2").arg(k + 1).arg(mismatch)));
    worstComponent = std::max(worstComponent, mismatch);
  }
  qInfo("worst eigenvalue relative error %.2e, worst 1 - r %.2e (%d components)", eigen.worst,
        worstComponent, result.components);
}

}  // namespace

class PcaTests : public QObject {
  Q_OBJECT
 private slots:
  void largeMeansAgainstReference_data() {
    QTest::addColumn<int>("fileType");
    QTest::addColumn<int>("outputType");
    QTest::newRow("uint16 -> float32") << int(GDT_UInt16) << int(OutputType::Float32);
    QTest::newRow("uint16 -> float64") << int(GDT_UInt16) << int(OutputType::Float64);
    QTest::newRow("int16 -> float32") << int(GDT_Int16) << int(OutputType::Float32);
    QTest::newRow("int32 -> float64") << int(GDT_Int32) << int(OutputType::Float64);
    QTest::newRow("float32 -> float32") << int(GDT_Float32) << int(OutputType::Float32);
    QTest::newRow("float64 -> float64") << int(GDT_Float64) << int(OutputType::Float64);
  }
  void largeMeansAgainstReference() {
    QFETCH(int, fileType);
    QFETCH(int, outputType);
    // DN about 5000 +- 50, like AVIRIS radiance: the case where raw moments in float32 fail.
    testing::Cube cube = testing::correlatedCube(61, 47, 12, 7);
    if (fileType != GDT_Float32 && fileType != GDT_Float64) testing::roundValues(cube);
    if (fileType == GDT_Float32)
      for (double& v : cube.values) v = static_cast<float>(v);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDALDataType(fileType));
    PcaOptions options = optionsFor(dir + "/in.tif", dir + "/out.tif");
    options.components = kAllComponents;
    options.outputType = OutputType(outputType);
    options.statsJson = (dir + "/stats.json").toStdString();
    options.tableCsv = (dir + "/table.csv").toStdString();
    TestFeedback feedback;
    const PcaResult result = runPca(options, feedback);
    QCOMPARE(result.components, 12);
    compareWithReference(cube, result, options.output);
    QCOMPARE(feedback.lastProgress(), 100.0);

    QFile json(dir + "/stats.json");
    QVERIFY(json.open(QIODevice::ReadOnly));
    const QJsonObject stats = QJsonDocument::fromJson(json.readAll()).object();
    QCOMPARE(stats["eigenvalues"].toArray().size(), 12);
    QCOMPARE(stats["eigenvalues"].toArray()[0].toDouble(), result.model.eigenvalues[0]);
    QCOMPARE(stats["eigenvectors"].toArray()[0].toArray().size(), 12);
    QCOMPARE(stats["mean"].toArray().size(), 12);
    QCOMPARE(stats["valid_pixels"].toDouble(), 61.0 * 47.0);
    QCOMPARE(stats["matrix"].toString(), QString("covariance"));
    QVERIFY(stats["seconds"].toObject().contains("moments"));
    QFile csv(dir + "/table.csv");
    QVERIFY(csv.open(QIODevice::ReadOnly));
    QCOMPARE(csv.readAll().count('\n'), 13);
    QCOMPARE(testing::filesIn(dir).size(), 4);  // nothing temporary left
  }

  void correlationMatrix() {
    testing::Cube cube = testing::correlatedCube(40, 30, 9, 17);
    for (int64_t p = 0; p < cube.pixels(); ++p) cube.values[p * 9 + 4] *= 1000.0;  // scales differ
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float64);
    PcaOptions options = optionsFor(dir + "/in.tif", dir + "/out.tif");
    options.components = kAllComponents;
    options.matrix = MatrixType::Correlation;
    options.outputType = OutputType::Float64;
    TestFeedback feedback;
    const PcaResult result = runPca(options, feedback);
    compareWithReference(cube, result, options.output, true);
  }

  void stripHeightsAndMemoryGiveTheSameResult() {
    // 1024 x 120 x 16 float64 = 15 MiB: resident under 1 GiB, streamed in small strips under
    // 16 MiB. 1024 pixels wide: one row per statistics group, so any strip height is possible.
    testing::Cube cube = testing::correlatedCube(120, 1024, 16, 99);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float64);
    std::vector<double> firstEigenvalues;
    testing::Cube firstOutput;
    struct Case {
      int64_t stripRows;
      int64_t ramMiB;
    };
    for (const Case c : {Case{0, 1024}, Case{0, 16}, Case{1, 1024}, Case{7, 16}, Case{13, 1024},
                         Case{119, 1024}, Case{120, 16}}) {
      PcaOptions options = optionsFor(dir + "/in.tif", dir + "/out.tif");
      options.components = 5;
      options.outputType = OutputType::Float64;
      options.stripRows = c.stripRows;
      options.ramBytes = c.ramMiB << 20;
      TestFeedback feedback;
      const PcaResult result = runPca(options, feedback);
      if (c.stripRows == 0) QCOMPARE(result.resident, c.ramMiB == 1024);
      const testing::Cube output = testing::readCube(options.output);
      if (firstEigenvalues.empty()) {
        firstEigenvalues = result.model.eigenvalues;
        firstOutput = output;
        compareWithReference(cube, result, options.output);
        continue;
      }
      // Bitwise the same: statistics are merged group by group whatever the strips.
      QCOMPARE(result.model.eigenvalues, firstEigenvalues);
      QCOMPARE(output.values, firstOutput.values);
    }
  }

  // A streamed job's peak resident memory grows by no more than its RAM budget (plus a little for
  // GDAL's and BLAS's own bookkeeping) above what the process held before it: a 160 MB
  // pixel-interleaved cube (the reader maps it) under 32 and 64 MiB. Heap that earlier tests freed
  // but the allocator kept can hide part of the growth: this catches a plan that overruns its
  // budget (the cube kept whole grows the peak by about 300 MiB), not a few MiB too many.
  void peakMemoryStaysWithinTheBudget_data() {
    QTest::addColumn<int>("ramMiB");
    QTest::addColumn<int>("components");
    QTest::newRow("32 MiB, 10 components") << 32 << 10;
    QTest::newRow("32 MiB, every component") << 32 << int(kAllComponents);
    QTest::newRow("64 MiB, every component") << 64 << int(kAllComponents);
  }
  void peakMemoryStaysWithinTheBudget() {
    QFETCH(int, ramMiB);
    QFETCH(int, components);
    static QString input;  // made once for the three cases
    if (input.isEmpty()) {
      SynthOptions synth;
      synth.output = (testing::tempDir() + "/cube.tif").toStdString();
      synth.rows = 800;
      synth.cols = 1000;
      synth.bands = 100;
      synth.type = GDT_UInt16;
      TestFeedback quiet;
      synthesizeScene(synth, quiet);
      input = QString::fromStdString(synth.output);
    }
    const QString dir = testing::tempDir();
    PcaOptions options = optionsFor(input, dir + "/out.tif");
    options.components = components;
    options.ramBytes = int64_t{ramMiB} << 20;
    bool resident = true;
    if (testing::underAddressSanitizer)
      QSKIP("AddressSanitizer's shadow memory and quarantine add to the resident size");
    const int64_t grown = testing::peakGrowth([&] {
      TestFeedback feedback;
      resident = runPca(options, feedback).resident;
    });
    if (grown < 0) QSKIP("this kernel cannot reset the peak resident size (/proc/self/clear_refs)");
    QVERIFY(!resident);
    qInfo("peak grew by %.1f MiB under a budget of %d MiB", grown / 1048576.0, ramMiB);
    QVERIFY(grown <= options.ramBytes + testing::kPeakSlackBytes);
  }

  void nodataAndNanExcluded_data() {
    QTest::addColumn<int>("fileType");
    QTest::newRow("float32, NaN and -9999") << int(GDT_Float32);
    QTest::newRow("int16, -9999") << int(GDT_Int16);
    QTest::newRow("uint16, 65535") << int(GDT_UInt16);
  }
  void nodataAndNanExcluded() {
    QFETCH(int, fileType);
    testing::Cube cube = testing::correlatedCube(33, 21, 8, 5);
    testing::roundValues(cube);
    const double nodata = fileType == GDT_UInt16 ? 65535.0 : -9999.0;
    cube.nodata.assign(8, nodata);
    for (int b = 0; b < 8; ++b) cube.at(0, 3, b) = nodata;               // a whole nodata pixel
    cube.at(4, 4, 2) = nodata;                                           // nodata in one band only
    for (int64_t c = 0; c < cube.cols; ++c) cube.at(10, c, 5) = nodata;  // a nodata row
    if (fileType == GDT_Float32) {
      cube.at(7, 7, 0) = NAN;
      cube.at(8, 1, 7) = INFINITY;
    }
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDALDataType(fileType));
    PcaOptions options = optionsFor(dir + "/in.tif", dir + "/out.tif");
    options.components = kAllComponents;
    TestFeedback feedback;
    const PcaResult result = runPca(options, feedback);
    QCOMPARE(result.model.validPixels,
             cube.pixels() - 2 - cube.cols - (fileType == GDT_Float32 ? 2 : 0));
    compareWithReference(cube, result, options.output);
    const testing::Cube written = testing::readCube(options.output);
    QCOMPARE(written.nodata[0], nodata);  // the input's nodata is kept
    QCOMPARE(written.at(0, 3, 0), nodata);
    QCOMPARE(written.at(10, 5, 2), nodata);
  }

  void nanWithoutDeclaredNodataBecomesNan() {
    testing::Cube cube = testing::correlatedCube(12, 12, 4, 2);
    cube.at(3, 3, 1) = NAN;
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
    PcaOptions options = optionsFor(dir + "/in.tif", dir + "/out.tif");
    TestFeedback feedback;
    runPca(options, feedback);
    const testing::Cube written = testing::readCube(options.output);
    QVERIFY(std::isnan(written.nodata[0]));
    QVERIFY(std::isnan(written.at(3, 3, 0)));
    QVERIFY(std::isfinite(written.at(3, 4, 0)));
  }

  void constantBands_data() {
    QTest::addColumn<bool>("correlation");
    QTest::newRow("covariance") << false;
    QTest::newRow("correlation") << true;
  }
  void constantBands() {
    QFETCH(bool, correlation);
    testing::Cube cube = testing::correlatedCube(30, 30, 10, 12);
    testing::roundValues(cube);
    for (int64_t p = 0; p < cube.pixels(); ++p) {
      cube.values[p * 10 + 0] = 0;
      cube.values[p * 10 + 6] = 4000;
    }
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_UInt16);
    PcaOptions options = optionsFor(dir + "/in.tif", dir + "/out.tif");
    options.components = kAllComponents;
    options.matrix = correlation ? MatrixType::Correlation : MatrixType::Covariance;
    TestFeedback feedback;
    const PcaResult result = runPca(options, feedback);
    QCOMPARE(result.components, 8);  // no spurious component for the constant bands
    QCOMPARE(feedback.warnings.size(), 1);
    QVERIFY(feedback.warnings[0].contains("constant"));
    QVERIFY(feedback.warnings[0].contains("1, 7"));
    compareWithReference(cube, result, options.output, correlation);
  }

  void varianceThreshold() {
    testing::Cube cube = testing::correlatedCube(50, 50, 10, 31);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
    const testing::Reference ref = testing::referencePca(cube);
    double total = 0;
    for (double v : ref.eigenvalues) total += v;
    for (double percent : {50.0, 90.0, 99.0, 99.9, 100.0}) {
      int expected = 0;
      double sum = 0;
      while (100 * sum < percent * total * (1 - 1e-12)) sum += ref.eigenvalues[expected++];
      PcaOptions options = optionsFor(dir + "/in.tif", dir + "/out.tif");
      options.variancePercent = percent;
      TestFeedback feedback;
      const PcaResult result = runPca(options, feedback);
      QCOMPARE(result.components, expected);
      QCOMPARE(testing::readCube(options.output).bands, expected);
    }
  }

  void byteRescale_data() {
    QTest::addColumn<bool>("withNodata");
    QTest::newRow("all valid: 0-255") << false;
    QTest::newRow("nodata: 1-255, 0 nodata") << true;
  }
  void byteRescale() {
    QFETCH(bool, withNodata);
    testing::Cube cube = testing::correlatedCube(45, 38, 6, 77);
    testing::roundValues(cube);
    if (withNodata) {
      cube.nodata.assign(6, 0.0);
      for (int b = 0; b < 6; ++b) cube.at(2, 2, b) = 0;
    }
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_UInt16);
    PcaOptions options = optionsFor(dir + "/in.tif", dir + "/out.tif");
    options.components = 3;
    options.outputType = OutputType::Byte;
    TestFeedback feedback;
    const PcaResult result = runPca(options, feedback);
    const testing::Cube written = testing::readCube(options.output);
    const testing::Reference ref = testing::referencePca(cube);
    const double low = withNodata ? 1.0 : 0.0;
    for (int k = 0; k < 3; ++k) {
      const std::vector<double> expected = testing::referenceComponent(cube, ref, k);
      double lo = INFINITY, hi = -INFINITY;
      for (double v : expected)
        if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
      int mismatches = 0;
      bool sawLow = false, sawHigh = false;
      for (int64_t p = 0; p < cube.pixels(); ++p) {
        const double got = written.values[p * 3 + k];
        if (!std::isfinite(expected[p])) {
          QCOMPARE(got, 0.0);
          continue;
        }
        const double scaled = low + (expected[p] - lo) * (255.0 - low) / (hi - lo);
        const double want = std::round(scaled);  // half away from zero, as GRASS i.pca
        sawLow |= got == low;
        sawHigh |= got == 255;
        // A value within rounding noise of a .5 boundary may go either way.
        if (got != want && std::abs(std::abs(scaled - std::trunc(scaled)) - 0.5) > 1e-4)
          ++mismatches;
      }
      QCOMPARE(mismatches, 0);
      QVERIFY(sawLow && sawHigh);
    }
    if (withNodata)
      QCOMPARE(written.nodata[0], 0.0);
    else
      QVERIFY(std::isnan(written.nodata[0]));  // no nodata declared when every pixel is valid
    QCOMPARE(result.byteMinimum.size(), size_t{3});
  }

  void enviAndGeoTiffGiveIdenticalResults() {
    testing::Cube cube = testing::correlatedCube(29, 31, 7, 123);
    testing::roundValues(cube);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Int16);
    testing::writeCube(cube, (dir + "/in.bsq").toStdString(), GDT_Int16, "ENVI",
                       {"INTERLEAVE=BSQ"});
    testing::writeCube(cube, (dir + "/in_bip.tif").toStdString(), GDT_Int16, "GTiff",
                       {"INTERLEAVE=PIXEL", "TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16"});
    std::vector<testing::Cube> outputs;
    std::vector<std::vector<double>> eigenvalues;
    for (const QString& name : {"in.tif", "in.bsq", "in_bip.tif"}) {
      PcaOptions options = optionsFor(dir + "/" + name, dir + "/out_" + name + ".tif");
      options.components = 4;
      TestFeedback feedback;
      eigenvalues.push_back(runPca(options, feedback).model.eigenvalues);
      outputs.push_back(testing::readCube(options.output));
    }
    for (size_t i = 1; i < outputs.size(); ++i) {
      QCOMPARE(eigenvalues[i], eigenvalues[0]);
      QCOMPARE(outputs[i].values, outputs[0].values);
    }
  }

  void enviOutput() {
    testing::Cube cube = testing::correlatedCube(20, 20, 5, 3);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
    PcaOptions options = optionsFor(dir + "/in.tif", dir + "/pcs.bsq");
    options.format = "ENVI";
    options.components = 2;
    TestFeedback feedback;
    runPca(options, feedback);
    QCOMPARE(testing::readCube(options.output).bands, 2);
    QStringList files = testing::filesIn(dir);
    files.removeAll("pcs.bsq.aux.xml");  // GDAL's sidecar for metadata, part of the dataset
    files.sort();
    QCOMPARE(files, QStringList({"in.tif", "pcs.bsq", "pcs.hdr"}));
    const int count = testing::filesIn(dir).size();
    runPca(options, feedback);  // replaces the existing ENVI dataset
    QCOMPARE(testing::filesIn(dir).size(), count);
  }

  // A share just below 100 % keeps the decimals that say so: PC1 explains 10000 / 10003 of the
  // variance here, "99.97 %", not a rounded "100.0 %".
  void sharesBelowAHundredAreNotRoundedUp() {
    testing::Cube cube;
    cube.rows = 60;
    cube.cols = 50;
    cube.bands = 3;
    cube.nodata.assign(3, std::nan(""));
    std::mt19937_64 random(3);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (int64_t p = 0; p < cube.pixels(); ++p)
      for (const double scale : {100.0, 1.0, 1.4})
        cube.values.push_back(1000 + scale * normal(random));
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float64);
    PcaOptions options = optionsFor(dir + "/in.tif", dir + "/out.tif");
    options.components = kAllComponents;
    TestFeedback feedback;
    const PcaResult result = runPca(options, feedback);
    QVERIFY(result.model.cumulativePercent(0) > 99.95 && result.model.cumulativePercent(0) < 100);
    DatasetPtr out(GDALDataset::Open(options.output.c_str(), GDAL_OF_RASTER));
    const QString first = out->GetRasterBand(1)->GetDescription();
    QVERIFY2(first.startsWith("PC1 (99.9") && first.contains("cum. 99.9"), qPrintable(first));
    QVERIFY2(QString(out->GetRasterBand(3)->GetDescription()).endsWith("cum. 100.0 %)"),
             out->GetRasterBand(3)->GetDescription());
  }

  void georeferencingAndDescriptions() {
    testing::Cube cube = testing::correlatedCube(15, 25, 5, 8);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
    PcaOptions options = optionsFor(dir + "/in.tif", dir + "/out.tif");
    options.components = 2;
    TestFeedback feedback;
    const PcaResult result = runPca(options, feedback);
    GDALDatasetH out = GDALOpen(options.output.c_str(), GA_ReadOnly);
    QVERIFY(out);
    double transform[6];
    GDALGetGeoTransform(out, transform);
    QCOMPARE(transform[0], 1000.0);
    QCOMPARE(transform[5], -2.0);
    QVERIFY(QString(GDALGetProjectionRef(out)).contains("UTM zone 33N"));
    const QString description = GDALGetDescription(GDALGetRasterBand(out, 1));
    QCOMPARE(description,
             QString("PC1 (%1 %, cum. %1 %)").arg(result.model.explainedPercent(0), 0, 'f', 1));
    QVERIFY(QString(GDALGetDescription(GDALGetRasterBand(out, 2))).startsWith("PC2 ("));
    GDALClose(out);
  }

  void bandSelection() {
    testing::Cube cube = testing::correlatedCube(20, 20, 8, 41);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float64);
    testing::Cube subset = cube;
    subset.bands = 3;
    subset.nodata.resize(3);
    subset.values.clear();
    for (int64_t p = 0; p < cube.pixels(); ++p)
      for (int b : {1, 4, 7}) subset.values.push_back(cube.values[p * 8 + b]);
    PcaOptions options = optionsFor(dir + "/in.tif", dir + "/out.tif");
    options.bands = {2, 5, 8};
    options.components = kAllComponents;
    options.outputType = OutputType::Float64;
    TestFeedback feedback;
    compareWithReference(subset, runPca(options, feedback), options.output);
  }

  // Workers of one process sharing a job (what several GPUs do, here on CPU backends): the same
  // statistics and output as one worker; one failing worker fails the job with its own error
  // and leaves nothing.
  void threadsShareOneJob() {
    const QString dir = testing::tempDir();
    testing::Cube cube = testing::correlatedCube(203, 71, 13, 77, 3000.0, 300.0);
    testing::roundValues(cube);
    cube.nodata.assign(13, -9999);
    for (int64_t row = 150; row < 203; ++row)  // the last worker's rows: all nodata
      for (int64_t col = 0; col < cube.cols; ++col)
        for (int b = 0; b < 13; ++b) cube.at(row, col, b) = -9999;
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Int16);
    PcaOptions options;
    options.input = (dir + "/in.tif").toStdString();
    options.output = (dir + "/one.tif").toStdString();
    options.device = parseDevice("cpu");
    options.stripRows = 16;
    options.creationOptions = {"COMPRESS=DEFLATE"};  // one shared dataset: any layout
    TestFeedback feedback;
    const PcaResult one = runPca(options, feedback);

    PcaResult shared;
    options.output = (dir + "/shared.tif").toStdString();
    options.statsJson = (dir + "/shared.json").toStdString();
    ThreadGroup threads(4);
    threads.run([&](JobGroup& group) {
      TestFeedback mine;
      PcaResult result = runPca(options, mine, group);
      if (group.rank() == 0) shared = result;
    });
    QCOMPARE(shared.model.validPixels, one.model.validPixels);
    QCOMPARE(shared.components, one.components);
    QVERIFY(QString::fromStdString(shared.backend).startsWith("4 x cpu"));
    for (size_t i = 0; i < one.model.eigenvalues.size(); ++i)
      QVERIFY(std::abs(shared.model.eigenvalues[i] - one.model.eigenvalues[i]) <=
              1e-12 * one.model.eigenvalues[0]);
    const testing::Cube a = testing::readCube(dir.toStdString() + "/one.tif");
    const testing::Cube b = testing::readCube(options.output);
    QCOMPARE(b.values.size(), a.values.size());
    for (int k = 0; k < a.bands; ++k) {
      const std::vector<double> x = testing::bandValues(a, k), y = testing::bandValues(b, k);
      double spread = 0;
      for (double v : x)
        if (!std::isnan(v)) spread = std::max(spread, std::abs(v));
      for (size_t p = 0; p < x.size(); ++p)
        QVERIFY(std::isnan(x[p]) ? std::isnan(y[p]) : std::abs(x[p] - y[p]) <= 1e-5 * spread);
    }

    // Worker 2 of 3 cannot read its rows.
    QDir(dir).mkdir("failing");
    testing::writeVrtMissingRows(cube, 140, dir + "/failing/in.vrt");
    options.input = (dir + "/failing/in.vrt").toStdString();
    options.output = (dir + "/failing/pc.tif").toStdString();
    options.statsJson.clear();
    ThreadGroup failing(3);
    try {
      failing.run([&](JobGroup& group) {
        TestFeedback mine;
        runPca(options, mine, group);
      });
      QFAIL("a worker could not read its rows, but the job succeeded");
    } catch (const Error& e) {
      QCOMPARE(QString::fromStdString(e.parameter()), QString("INPUT"));
      QVERIFY2(QString(e.what()).contains("cannot read rows"), e.what());
    }
    QCOMPARE(testing::filesIn(dir + "/failing"), QStringList({"in.vrt", "top.tif"}));

    // Cancel during pass 2: every worker stops, and nothing is left.
    QDir(dir).mkdir("canceled");
    options.input = (dir + "/in.tif").toStdString();
    options.output = (dir + "/canceled/pc.tif").toStdString();
    TestFeedback cancelAt70(70.0);
    ThreadGroup canceled(3);
    bool stopped = false;
    try {
      canceled.run([&](JobGroup& group) { runPca(options, cancelAt70, group); });
    } catch (const Canceled&) {
      stopped = true;
    }
    QVERIFY(stopped);
    QCOMPARE(testing::filesIn(dir + "/canceled"), QStringList());
  }

  void cancelLeavesNothingAndKeepsTheDestination() {
    testing::Cube cube = testing::correlatedCube(200, 50, 6, 4);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
    QFile existing(dir + "/out.tif");
    QVERIFY(existing.open(QIODevice::WriteOnly));
    existing.write("an earlier result");
    existing.close();
    for (double cancelAt : {10.0, 60.0, 95.0}) {
      PcaOptions options = optionsFor(dir + "/in.tif", dir + "/out.tif");
      options.stripRows = 3;
      options.statsJson = (dir + "/stats.json").toStdString();
      TestFeedback feedback(cancelAt);
      QVERIFY_EXCEPTION_THROWN(runPca(options, feedback), Canceled);
      QStringList files = testing::filesIn(dir);
      files.sort();
      QCOMPARE(files, QStringList({"in.tif", "out.tif"}));
      QVERIFY(existing.open(QIODevice::ReadOnly));
      QCOMPARE(existing.readAll(), QByteArray("an earlier result"));
      existing.close();
    }
    // A successful run replaces it.
    TestFeedback feedback;
    runPca(optionsFor(dir + "/in.tif", dir + "/out.tif"), feedback);
    QVERIFY(testing::readCube((dir + "/out.tif").toStdString()).bands > 0);
  }

  void jasperRidge() {
    const QString data = testing::sharedDataDir();
    if (data.isEmpty())
      QSKIP("../shared/data is absent: the real-scene test needs the Jasper Ridge cube");
    const QString input = data + "/jasper_ridge_100x100x198_uint16.tif";
    const testing::Cube cube = testing::readCube(input.toStdString());
    const QString dir = testing::tempDir();
    PcaOptions options = optionsFor(input, dir + "/jasper_pcs.tif");
    options.components = kAllComponents;
    options.outputType = OutputType::Float64;
    TestFeedback feedback;
    const PcaResult result = runPca(options, feedback);
    compareWithReference(cube, result, options.output);
    // The published float64 reference (../shared/data/README.md).
    const double published[] = {142778742.3, 18114134.79, 1314772.839, 402591.9609, 150583.851};
    for (int k = 0; k < 5; ++k)
      QVERIFY(std::abs(result.model.eigenvalues[k] / published[k] - 1) < 1e-9);
    QCOMPARE(result.model.validPixels, int64_t{10000});
  }

  void jasperRidgeEnviAndNodata() {
    const QString data = testing::sharedDataDir();
    if (data.isEmpty())
      QSKIP("../shared/data is absent: the real-scene test needs the Jasper Ridge cube");
    const QString dir = testing::tempDir();
    PcaOptions tif = optionsFor(data + "/jasper_ridge_100x100x198_uint16.tif", dir + "/a.tif");
    PcaOptions envi = optionsFor(data + "/jasper_ridge_100x100x198_uint16.bsq", dir + "/b.tif");
    TestFeedback feedback;
    QCOMPARE(runPca(envi, feedback).model.eigenvalues, runPca(tif, feedback).model.eigenvalues);
    QCOMPARE(testing::readCube(envi.output).values, testing::readCube(tif.output).values);

    const QString withNodata = data + "/jasper_ridge_nodata65535.tif";
    PcaOptions options = optionsFor(withNodata, dir + "/c.tif");
    options.components = 10;
    const PcaResult result = runPca(options, feedback);
    QCOMPARE(result.model.validPixels, int64_t{8000});
    compareWithReference(testing::readCube(withNodata.toStdString()), result, options.output);
  }

  void moffettConstantBandsAndSamson() {
    const QString data = testing::sharedDataDir();
    if (data.isEmpty()) QSKIP("../shared/data is absent: the real-scene test needs its cubes");
    const QString dir = testing::tempDir();
    for (const char* name : {"moffett_50x50x189_float64.tif", "samson_95x95x156_float64.tif"}) {
      const QString input = data + "/" + name;
      PcaOptions options = optionsFor(input, dir + "/" + name);
      options.matrix = MatrixType::Correlation;
      options.components = 20;
      options.outputType = OutputType::Float64;
      TestFeedback feedback;
      const PcaResult result = runPca(options, feedback);
      const testing::Cube cube = testing::readCube(input.toStdString());
      const testing::Reference ref = testing::referencePca(cube, true);
      QCOMPARE(result.model.constantBands.size(), ref.constant.size());
      if (QString(name).startsWith("moffett"))
        QCOMPARE(result.model.constantBands, (std::vector<int>{0, 1, 2}));
      for (int k = 0; k < 20; ++k)
        QVERIFY(std::abs(result.model.eigenvalues[k] / ref.eigenvalues[k] - 1) < 1e-6);
    }
  }
};

QTEST_GUILESS_MAIN(PcaTests)
#include "test_pca.moc"
