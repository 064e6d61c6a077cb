// Denoising and the inverse transform (hyperstream denoise and inverse): each pixel rebuilt from
// its first PCA or MNF components against the float64 reference (TestSupport's referenceRebuild),
// the inverse of all components returning the input, integer outputs rounded, clamped and kept
// off nodata, strip heights and budgets giving the same bits, and clear errors.

#include "DeviceOption.h"
#include "TestFeedback.h"
#include "TestSupport.h"
#include "core/Error.h"
#include "pca/PcaJob.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>
#include <limits>

using namespace hyperstream;

namespace {

enum class Kind { Pca, Correlation, Mnf };

PcaOptions denoiseOptions(const QString& input, const QString& output, Kind kind, int components) {
  PcaOptions options;
  options.input = input.toStdString();
  options.output = output.toStdString();
  options.device = parseDevice("cpu");
  options.components = components;
  options.outputType = OutputType::SameAsInput;
  if (kind == Kind::Correlation) options.matrix = MatrixType::Correlation;
  if (kind == Kind::Mnf) options.noise = NoiseDirection::LowerRight;
  return options;
}

// A fit that writes `components` components of `type` (DIR/components.tif) and its statistics
// (DIR/fit.json) from DIR/in.tif.
PcaOptions fitOptions(const QString& dir, Kind kind, int components, OutputType type) {
  PcaOptions options = denoiseOptions(dir + "/in.tif", dir + "/components.tif", kind, components);
  options.outputType = type;
  options.statsJson = (dir + "/fit.json").toStdString();
  return options;
}

// The inverse of the components a fitting run wrote (`fit.output`, its `fit.statsJson`), into
// `output`, as Float64.
PcaOptions inverseOptions(const PcaOptions& fit, const QString& output) {
  PcaOptions options;
  options.savedTransform = fit.statsJson;
  options.input = fit.output;
  options.output = output.toStdString();
  options.device = fit.device;
  options.outputType = OutputType::Float64;
  return options;
}

// The reference fit and what its components add back to the bands.
struct ReferenceFit {
  testing::Reference reference;
  std::vector<std::vector<double>> inverse;
  bool correlation = false;
};

ReferenceFit referenceFit(const testing::Cube& cube, Kind kind) {
  ReferenceFit fit;
  fit.correlation = kind == Kind::Correlation;
  if (kind == Kind::Mnf) {
    int64_t pairs = 0;
    const std::vector<double> noise = testing::referenceNoiseCovariance(cube, 1, 1, pairs);
    fit.reference = testing::referenceMnf(cube, 1, 1);
    fit.inverse = testing::referenceInverseLoadings(fit.reference, cube.bands, &noise);
  } else {
    fit.reference = testing::referencePca(cube, fit.correlation);
    fit.inverse =
        testing::referenceInverseLoadings(fit.reference, cube.bands, nullptr, fit.correlation);
  }
  return fit;
}

testing::Cube rebuilt(const testing::Cube& cube, const ReferenceFit& fit, int components) {
  return testing::referenceRebuild(cube, fit.reference, components, fit.inverse, fit.correlation);
}

double largestMagnitude(const testing::Cube& cube) {
  double largest = 0;
  for (double v : cube.values)
    if (std::isfinite(v)) largest = std::max(largest, std::abs(v));
  return largest;
}

// A float output: every valid value within `tolerance` of the expected one, relative to the
// largest expected magnitude; invalid pixels hold the output's nodata (NaN or its value).
void compareFloat(const testing::Cube& written, const testing::Cube& expected, double tolerance) {
  QCOMPARE(written.values.size(), expected.values.size());
  const double scale = largestMagnitude(expected);
  double worst = 0;
  for (size_t i = 0; i < expected.values.size(); ++i) {
    const double want = expected.values[i], got = written.values[i];
    const double nodata = written.nodata[i % static_cast<size_t>(written.bands)];
    if (std::isnan(want)) {
      if (!(std::isnan(got) || got == nodata))
        QFAIL(qPrintable(QString("value %1: an invalid pixel holds %2").arg(i).arg(got)));
      continue;
    }
    worst = std::max(worst, std::abs(got - want) / scale);
  }
  if (!(worst <= tolerance))
    QFAIL(qPrintable(QString("largest relative difference %1 > %2").arg(worst).arg(tolerance)));
  qInfo("largest relative difference %.2e", worst);
}

// An integer output: the expected value rounded half away from zero and clamped to [lowest,
// highest], or one step off nodata where it would land on it; values within 1e-6 of a tie may
// round either way. Invalid pixels hold nodata.
void compareInteger(const testing::Cube& written, const testing::Cube& expected, double lowest,
                    double highest) {
  QCOMPARE(written.values.size(), expected.values.size());
  int64_t clamped = 0, movedOffNodata = 0;
  for (size_t i = 0; i < expected.values.size(); ++i) {
    const double want = expected.values[i], got = written.values[i];
    const double nodata = written.nodata[i % static_cast<size_t>(written.bands)];
    if (std::isnan(want)) {
      if (got != nodata) QFAIL(qPrintable(QString("value %1: invalid, but %2").arg(i).arg(got)));
      continue;
    }
    if (got == nodata) QFAIL(qPrintable(QString("value %1: valid, but nodata").arg(i)));
    double rounded = std::clamp(std::round(want), lowest, highest);
    if (rounded != std::round(want)) ++clamped;
    if (rounded == nodata) {
      ++movedOffNodata;
      rounded = (want > nodata && nodata < highest) || nodata == lowest ? nodata + 1 : nodata - 1;
    }
    const bool tie = std::abs(std::abs(want - std::trunc(want)) - 0.5) < 1e-6;
    if (got != rounded && !(tie && std::abs(got - want) <= 0.5 + 1e-6))
      QFAIL(qPrintable(QString("value %1: %2, expected %3 (%4)")
                           .arg(i)
                           .arg(got)
                           .arg(rounded)
                           .arg(want, 0, 'g', 12)));
  }
  qInfo("%lld clamped, %lld moved off nodata", static_cast<long long>(clamped),
        static_cast<long long>(movedOffNodata));
}

void punchHoles(testing::Cube& cube, double nodata) {
  cube.nodata.assign(cube.bands, nodata);
  for (int64_t r = 4; r < 8; ++r)
    for (int64_t c = 2; c < 9; ++c) cube.at(r, c, 1) = nodata;
  for (int64_t p = 5; p < cube.pixels(); p += 41) cube.values[p * cube.bands + 3] = nodata;
}

QByteArray fileBytes(const std::string& path) {
  QFile file(QString::fromStdString(path));
  return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

PcaResult fitting(const PcaOptions& options, Feedback& feedback) {
  return runPca(options, feedback);
}
PcaResult inverting(const PcaOptions& options, Feedback& feedback) {
  return runInverse(options, feedback);
}

template <class Job>
void expectError(const Job& job, const PcaOptions& options, const char* parameter,
                 const char* words) {
  TestFeedback feedback;
  try {
    job(options, feedback);
    QFAIL("no error");
  } catch (const Error& e) {
    QCOMPARE(QString::fromStdString(e.parameter()), QString(parameter));
    QVERIFY2(QString(e.what()).contains(words), e.what());
  }
  QVERIFY(!QFile::exists(QString::fromStdString(options.output)));
}

}  // namespace

class DenoiseTests : public QObject {
  Q_OBJECT
 private slots:
  void againstReference_data() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("fileType");
    QTest::addColumn<int>("outputType");
    const char* names[] = {"pca", "correlation", "mnf"};
    for (int kind = 0; kind < 3; ++kind)
      for (int type : {GDT_UInt16, GDT_Int16, GDT_Float32})
        for (int output : {int(OutputType::SameAsInput), int(OutputType::Float64)})
          QTest::newRow(
              qPrintable(QString("%1 %2 to %3")
                             .arg(names[kind], GDALGetDataTypeName(GDALDataType(type)),
                                  output == int(OutputType::Float64) ? "Float64" : "its type")))
              << kind << type << output;
  }
  // Denoising with the four components of a four-field scene (a clear eigenvalue gap) equals the
  // reference rebuild; holes and NaN pixels stay nodata.
  void againstReference() {
    QFETCH(int, kind);
    QFETCH(int, fileType);
    QFETCH(int, outputType);
    testing::Cube cube = testing::smoothScene(47, 39, 9, 21 + kind);
    const bool integer = fileType != GDT_Float32;
    if (integer) testing::roundValues(cube);
    if (fileType == GDT_Float32) {
      for (double& v : cube.values) v = static_cast<float>(v);
      cube.nodata.assign(cube.bands, std::nan(""));
      for (int64_t p = 3; p < cube.pixels(); p += 31) cube.values[p * cube.bands + 4] = NAN;
    } else {
      punchHoles(cube, fileType == GDT_Int16 ? -9999 : 65535);
    }
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDALDataType(fileType));
    PcaOptions options = denoiseOptions(dir + "/in.tif", dir + "/out.tif", Kind(kind), 4);
    options.outputType = OutputType(outputType);
    options.stripRows = 6;
    TestFeedback feedback;
    const PcaResult result = runDenoise(options, feedback);
    QCOMPARE(result.components, 4);
    const testing::Cube expected = rebuilt(cube, referenceFit(cube, Kind(kind)), 4);
    const testing::Cube written = testing::readCube(options.output);
    QCOMPARE(written.bands, cube.bands);
    if (OutputType(outputType) == OutputType::Float64 || !integer)
      compareFloat(written, expected, OutputType(outputType) == OutputType::Float64 ? 1e-9 : 1e-6);
    else if (fileType == GDT_UInt16)
      compareInteger(written, expected, 0, 65535);
    else
      compareInteger(written, expected, -32768, 32767);
    QCOMPARE(result.outputType, OutputType(outputType) == OutputType::Float64
                                    ? OutputType::Float64
                                    : outputTypeOf(GDALDataType(fileType)));
  }

  void clampsAndKeepsOffNodata_data() {
    QTest::addColumn<int>("bands");
    QTest::newRow("8 bands") << 8;
    QTest::newRow("45 bands") << 45;  // rebuilt 32, 8 and 5 at a time
  }
  // Near zero, rebuilt UInt16 values round below 0 (clamped) and onto nodata 0 (moved to 1).
  void clampsAndKeepsOffNodata() {
    QFETCH(int, bands);
    testing::Cube cube = testing::smoothScene(40, 33, bands, 5, 6.0);
    testing::roundValues(cube);
    for (double& v : cube.values) v = std::max(1.0, v);
    cube.nodata.assign(cube.bands, 0.0);
    for (int64_t c = 0; c < 12; ++c) cube.at(9, c, 2) = 0;
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_UInt16);
    const PcaOptions options = denoiseOptions(dir + "/in.tif", dir + "/out.tif", Kind::Pca, 2);
    TestFeedback feedback;
    runDenoise(options, feedback);
    const testing::Cube expected = rebuilt(cube, referenceFit(cube, Kind::Pca), 2);
    // Each group of bands the kernel rebuilds together (see the rows) has values that round
    // onto nodata.
    for (auto [first, last] : {std::pair{0, std::min(bands, 32)}, std::pair{32, 40}, {40, 45}}) {
      if (first >= bands) break;
      int64_t ontoNodata = 0;
      for (int64_t p = 0; p < expected.pixels(); ++p)
        for (int b = first; b < last; ++b) {
          const double v = expected.values[p * bands + b];
          ontoNodata += v >= -0.5 && v < 0.5 ? 1 : 0;
        }
      QVERIFY2(ontoNodata > 0,
               qPrintable(
                   QString("no value of bands %1-%2 rounds onto nodata").arg(first).arg(last - 1)));
    }
    compareInteger(testing::readCube(options.output), expected, 0, 65535);
  }

  void inverseOfAllComponentsReturnsTheInput_data() {
    QTest::addColumn<int>("kind");
    QTest::newRow("pca") << int(Kind::Pca);
    QTest::newRow("correlation") << int(Kind::Correlation);
    QTest::newRow("mnf") << int(Kind::Mnf);
  }
  // Float64 components of every non-constant band, inverted: the input within 1e-9 (Float64) and
  // exactly (its own type). A constant band rebuilds to its value.
  void inverseOfAllComponentsReturnsTheInput() {
    QFETCH(int, kind);
    testing::Cube cube = testing::smoothScene(45, 38, 9, 31 + kind);
    testing::roundValues(cube);
    for (int64_t p = 0; p < cube.pixels(); ++p) cube.values[p * cube.bands + 6] = 777;
    punchHoles(cube, 65535);
    const QString dir = testing::tempDir();
    const std::string input = (dir + "/in.tif").toStdString();
    testing::writeCube(cube, input, GDT_UInt16);
    PcaOptions fit;
    fit.input = input;
    fit.output = (dir + "/components.tif").toStdString();
    fit.statsJson = (dir + "/fit.json").toStdString();
    fit.device = parseDevice("cpu");
    fit.components = kAllComponents;
    fit.outputType = OutputType::Float64;
    if (Kind(kind) == Kind::Correlation) fit.matrix = MatrixType::Correlation;
    if (Kind(kind) == Kind::Mnf) fit.noise = NoiseDirection::LowerRight;
    TestFeedback feedback;
    QCOMPARE(runPca(fit, feedback).components, 8);  // one band is constant
    PcaOptions inverse = inverseOptions(fit, dir + "/inverse64.tif");
    inverse.stripRows = 5;
    const PcaResult result = runInverse(inverse, feedback);
    QCOMPARE(result.components, 8);
    testing::Cube expected = cube;
    for (int64_t p = 0; p < cube.pixels(); ++p)
      if (!testing::referenceValid(cube, p))
        for (int b = 0; b < cube.bands; ++b) expected.values[p * cube.bands + b] = std::nan("");
    const testing::Cube written = testing::readCube(inverse.output);
    QCOMPARE(written.nodata[0], 65535.0);
    compareFloat(written, expected, 1e-9);
    inverse.outputType = OutputType::SameAsInput;
    inverse.output = (dir + "/inverse.tif").toStdString();
    QCOMPARE(runInverse(inverse, feedback).outputType, OutputType::UInt16);
    // Exactly the input, where an invalid pixel is nodata in every band.
    for (double& v : expected.values)
      if (std::isnan(v)) v = 65535;
    QCOMPARE(testing::readCube(inverse.output).values, expected.values);
  }

  // Denoising in one job equals fitting the components, then inverting the first K.
  void denoiseEqualsComponentsThenInverse() {
    testing::Cube cube = testing::correlatedCube(61, 29, 12, 8);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
    cube = testing::readCube((dir + "/in.tif").toStdString());
    for (const Kind kind : {Kind::Pca, Kind::Mnf}) {
      const PcaOptions fit = fitOptions(dir, kind, 5, OutputType::Float64);
      TestFeedback feedback;
      runPca(fit, feedback);
      const PcaOptions inverse = inverseOptions(fit, dir + "/inverse.tif");
      runInverse(inverse, feedback);
      PcaOptions denoise = denoiseOptions(dir + "/in.tif", dir + "/denoised.tif", kind, 5);
      denoise.outputType = OutputType::Float64;
      runDenoise(denoise, feedback);
      compareFloat(testing::readCube(denoise.output), testing::readCube(inverse.output), 1e-12);
      compareFloat(testing::readCube(denoise.output), rebuilt(cube, referenceFit(cube, kind), 5),
                   1e-9);
    }
  }

  // From Byte components the inverse undoes the rescale: within half a byte step of each
  // component times what it adds back.
  void inverseOfByteComponents() {
    testing::Cube cube = testing::smoothScene(44, 31, 7, 3);
    testing::roundValues(cube);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_UInt16);
    const PcaOptions fit = fitOptions(dir, Kind::Pca, 3, OutputType::Byte);
    TestFeedback feedback;
    const PcaResult components = runPca(fit, feedback);
    const PcaOptions inverse = inverseOptions(fit, dir + "/inverse.tif");
    runInverse(inverse, feedback);
    const ReferenceFit reference = referenceFit(cube, Kind::Pca);
    const testing::Cube expected = rebuilt(cube, reference, 3);
    const testing::Cube written = testing::readCube(inverse.output);
    for (int b = 0; b < cube.bands; ++b) {
      double bound = 0;
      for (int k = 0; k < 3; ++k)
        bound += 0.5 * (components.byteMaximum[k] - components.byteMinimum[k]) / 255.0 *
                 std::abs(reference.inverse[k][b]);
      for (int64_t p = 0; p < cube.pixels(); ++p) {
        const size_t i = static_cast<size_t>(p * cube.bands + b);
        if (!(std::abs(written.values[i] - expected.values[i]) <= bound * 1.001 + 1e-9))
          QFAIL(qPrintable(QString("band %1 pixel %2: %3 vs %4 (bound %5)")
                               .arg(b + 1)
                               .arg(p)
                               .arg(written.values[i])
                               .arg(expected.values[i])
                               .arg(bound)));
      }
    }
  }

  // Strip heights and RAM budgets give the same bits, and a streamed run (the cube does not fit
  // 16 MiB) stays within its budget.
  void stripHeightsAndBudgetsGiveTheSameBits() {
    // 1024 pixels wide: one row per statistics group, so any strip height is possible. 39 MB in
    // float64.
    testing::Cube cube = testing::smoothScene(300, 1024, 16, 9);
    punchHoles(cube, 0);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float64);
    for (const Kind kind : {Kind::Pca, Kind::Mnf}) {
      QByteArray first;
      for (const int64_t rows : {int64_t{0}, int64_t{1}, int64_t{7}})
        for (const int64_t ramMiB : {int64_t{1024}, int64_t{16}}) {
          PcaOptions options = denoiseOptions(dir + "/in.tif", dir + "/out.tif", kind, 4);
          options.stripRows = rows;
          options.ramBytes = ramMiB << 20;
          TestFeedback feedback;
          const int64_t growth = testing::peakGrowth([&] { runDenoise(options, feedback); });
          if (!testing::underAddressSanitizer && growth >= 0 && rows == 0)
            QVERIFY2(growth <= options.ramBytes + testing::kPeakSlackBytes,
                     qPrintable(QString("peak grew %1 MiB").arg(growth >> 20)));
          const QByteArray bytes = fileBytes(options.output);
          if (first.isEmpty()) first = bytes;
          QVERIFY2(bytes == first,
                   qPrintable(QString("strips of %1 rows, %2 MiB differ").arg(rows).arg(ramMiB)));
        }
    }
  }

  // Selected bands: the output has those, rebuilt from a fit on them alone, described as the
  // input's bands.
  void selectedBands() {
    testing::Cube cube = testing::smoothScene(33, 29, 10, 12);
    testing::roundValues(cube);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Int16);
    GDALDatasetH input = GDALOpen((dir + "/in.tif").toUtf8().constData(), GA_Update);
    QVERIFY(input);
    GDALSetDescription(GDALGetRasterBand(input, 8), "1200 nm");
    GDALClose(input);
    PcaOptions options = denoiseOptions(dir + "/in.tif", dir + "/out.tif", Kind::Mnf, 3);
    options.bands = {BandRange(2, 5), 8, 10};
    options.outputType = OutputType::Float64;
    TestFeedback feedback;
    runDenoise(options, feedback);
    testing::Cube selected = cube;
    selected.bands = 6;
    selected.values.clear();
    selected.nodata.assign(6, std::nan(""));
    for (int64_t p = 0; p < cube.pixels(); ++p)
      for (int b : {1, 2, 3, 4, 7, 9}) selected.values.push_back(cube.values[p * cube.bands + b]);
    compareFloat(testing::readCube(options.output),
                 rebuilt(selected, referenceFit(selected, Kind::Mnf), 3), 1e-9);
    GDALDatasetH dataset = GDALOpen(options.output.c_str(), GA_ReadOnly);
    QVERIFY(dataset);
    QCOMPARE(QString(GDALGetDescription(GDALGetRasterBand(dataset, 5))), QString("1200 nm"));
    GDALClose(dataset);
  }

  void realScenes() {
    const QString data = testing::sharedDataDir();
    if (data.isEmpty()) QSKIP("../shared/data is absent: the real-scene test needs its cubes");
    const QString dir = testing::tempDir();
    for (const char* file : {"jasper_ridge_100x100x198_uint16.tif", "jasper_ridge_nodata65535.tif",
                             "samson_95x95x156_float64.tif", "moffett_50x50x189_float64.tif"})
      for (const Kind kind : {Kind::Pca, Kind::Mnf}) {
        const QString input = data + "/" + file;
        PcaOptions options = denoiseOptions(input, dir + "/out.tif", kind, 10);
        options.outputType = OutputType::Float64;
        TestFeedback feedback;
        runDenoise(options, feedback);
        const testing::Cube cube = testing::readCube(input.toStdString());
        qInfo("%s, %s:", file, kind == Kind::Mnf ? "MNF" : "PCA");
        compareFloat(testing::readCube(options.output), rebuilt(cube, referenceFit(cube, kind), 10),
                     1e-9);
      }
  }

  void errors() {
    testing::Cube cube = testing::smoothScene(20, 16, 5, 2);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
    const PcaOptions fit = fitOptions(dir, Kind::Mnf, 3, OutputType::Float32);
    TestFeedback feedback;
    runPca(fit, feedback);

    PcaOptions inverse = inverseOptions(fit, dir + "/inverse.tif");
    inverse.savedTransform.clear();
    inverse.outputType = OutputType::SameAsInput;
    expectError(inverting, inverse, "STATS", "statistics JSON");
    inverse.savedTransform = fit.statsJson;
    inverse.bands = {2, 3};
    expectError(inverting, inverse, "BANDS", "from the first on");
    inverse.bands = {};
    // A component raster with more bands than the transform has components.
    testing::writeCube(testing::smoothScene(20, 16, 7, 4), (dir + "/seven.tif").toStdString(),
                       GDT_Float32);
    inverse.input = (dir + "/seven.tif").toStdString();
    expectError(inverting, inverse, "INPUT", "has 5 components");
    inverse.input = fit.output;
    // Statistics of an older run: no MNF inverse loadings, no input type.
    QFile file(QString::fromStdString(fit.statsJson));
    QVERIFY(file.open(QIODevice::ReadOnly));
    QJsonObject json = QJsonDocument::fromJson(file.readAll()).object();
    file.close();
    json.remove("inverse_loadings");
    json.remove("input_type");
    QFile old(dir + "/old.json");
    QVERIFY(old.open(QIODevice::WriteOnly));
    old.write(QJsonDocument(json).toJson());
    old.close();
    inverse.savedTransform = (dir + "/old.json").toStdString();
    expectError(inverting, inverse, "OUTPUT_TYPE", "data type");
    inverse.outputType = OutputType::Float32;
    expectError(inverting, inverse, "STATS", "inverse loadings");

    PcaOptions components = fit;
    components.output = (dir + "/other.tif").toStdString();
    components.outputType = OutputType::UInt16;
    expectError(fitting, components, "OUTPUT_TYPE", "Float32, Float64 or Byte");
  }
};

QTEST_GUILESS_MAIN(DenoiseTests)
#include "test_denoise.moc"
