// The per-pixel and per-column jobs on a GPU against the CPU (whose own suites hold them to
// float64 references): SPP, the unmixing chain, the spectral angle mapper, local RX and
// per-column detection. The covariance jobs' GPU tests are test_gpu.cpp's.

#include "DeviceOption.h"
#include "GpuTestSupport.h"
#include "TestFeedback.h"
#include "TestSupport.h"
#include "core/Error.h"
#include "core/Samples.h"
#include "detect/ColumnDetectJob.h"
#include "detect/LocalRxJob.h"
#include "detect/SamJob.h"
#include "io/TextFile.h"
#include "pixels/PixelKernels.h"
#include "run/GpuRuntime.h"
#include "spectra/EndmemberTable.h"
#include "spp/SppJob.h"
#include "synth/Synth.h"
#include "unmixing/AbundanceJob.h"
#include "unmixing/EndmemberJob.h"

#include <QFileInfo>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

using namespace hyperstream;

class GpuPixelTests : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    const QString whyNot = testing::whyNoGpu();
    if (!whyNot.isEmpty()) QSKIP(qPrintable(whyNot));
  }

  // SPP: GPU against CPU (whose own tests hold it to the float64 reference): alpha within 1e-6
  // absolute, displaced spectra within 1e-5 relative, same nodata; both borders, strips.
  void spatialPreprocessing_data() {
    QTest::addColumn<int>("window");
    QTest::addColumn<bool>("mirror");
    QTest::addColumn<int>("stripRows");
    QTest::addColumn<int>("type");
    QTest::addColumn<bool>("noiseAdjusted");
    QTest::newRow("window 3, truncate, int16") << 3 << false << 0 << int(GDT_Int16) << false;
    QTest::newRow("window 11, mirror, uint16, strips of 7")
        << 11 << true << 7 << int(GDT_UInt16) << false;
    QTest::newRow("window 15, truncate, float32, strips of 1")
        << 15 << false << 1 << int(GDT_Float32) << false;
    QTest::newRow("window 15, mirror, uint16, strips of 20")
        << 15 << true << 20 << int(GDT_UInt16) << false;
    QTest::newRow("window 5, mirror, float64") << 5 << true << 0 << int(GDT_Float64) << false;
    QTest::newRow("noise-adjusted, window 5, truncate, uint16, strips of 7")
        << 5 << false << 7 << int(GDT_UInt16) << true;
    QTest::newRow("noise-adjusted, window 13, mirror, float32")
        << 13 << true << 0 << int(GDT_Float32) << true;
  }
  void spatialPreprocessing() {
    QFETCH(int, window);
    QFETCH(bool, mirror);
    QFETCH(int, stripRows);
    QFETCH(int, type);
    QFETCH(bool, noiseAdjusted);
    // 75 columns: GPU tiles of 32 columns, the last one partial; 23 bands: a partial band chunk.
    testing::Cube cube = testing::correlatedCube(41, 75, 23, 5 + window, 3000.0, 400.0);
    testing::roundValues(cube);
    cube.nodata.assign(23, type == GDT_UInt16 ? 65535 : -9999);
    for (int b = 0; b < 23; ++b) cube.values[50 * 23 + b] = cube.nodata[b];  // nodata pixel
    for (int b = 0; b < 23; ++b) cube.values[90 * 23 + b] = 0;               // zero spectrum
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDALDataType(type));
    SppOptions options;
    options.input = (dir + "/in.tif").toStdString();
    options.window = window;
    options.border = mirror ? SppBorder::Mirror : SppBorder::Truncate;
    options.stripRows = stripRows;
    options.noiseAdjusted = noiseAdjusted;
    SppResult results[2];
    for (int gpu = 0; gpu < 2; ++gpu) {
      options.device = gpu ? DeviceChoice::anyGpu() : DeviceChoice::cpu();
      options.output = (dir + (gpu ? "/gpu.tif" : "/cpu.tif")).toStdString();
      options.alphaOutput = (dir + (gpu ? "/gpu-alpha.tif" : "/cpu-alpha.tif")).toStdString();
      TestFeedback feedback;
      results[gpu] = runSpp(options, feedback);
    }
    QVERIFY(QString::fromStdString(results[1].backend).startsWith("gpu"));
    QCOMPARE(results[1].validPixels, results[0].validPixels);
    QCOMPARE(results[1].noiseVariance, results[0].noiseVariance);  // the same host pass
    const testing::Cube cpuAlpha = testing::readCube((dir + "/cpu-alpha.tif").toStdString());
    const testing::Cube gpuAlpha = testing::readCube((dir + "/gpu-alpha.tif").toStdString());
    const testing::Cube cpuOut = testing::readCube((dir + "/cpu.tif").toStdString());
    const testing::Cube gpuOut = testing::readCube((dir + "/gpu.tif").toStdString());
    double worstAlpha = 0, worstOut = 0;
    for (int64_t p = 0; p < cube.pixels(); ++p) {
      QCOMPARE(std::isnan(gpuAlpha.values[p]), std::isnan(cpuAlpha.values[p]));
      if (std::isnan(cpuAlpha.values[p])) {
        QCOMPARE(gpuOut.values[p * 23], cpuOut.values[p * 23]);  // nodata
        continue;
      }
      worstAlpha = std::max(worstAlpha, std::abs(gpuAlpha.values[p] - cpuAlpha.values[p]));
      for (int b = 0; b < 23; ++b) {
        const double a = cpuOut.values[p * 23 + b], g = gpuOut.values[p * 23 + b];
        worstOut = std::max(worstOut, std::abs(g - a) / std::abs(a));
      }
    }
    QVERIFY2(worstAlpha <= 1e-6, qPrintable(QString("alpha differs by %1").arg(worstAlpha)));
    QVERIFY2(worstOut <= 1e-5, qPrintable(QString("output differs by %1").arg(worstOut)));
    qInfo("SPP GPU vs CPU: alpha within %.1e, output within %.1e relative", worstAlpha, worstOut);
  }

  // The unmixing chain on the GPU: the same endmember pixels as the CPU for every method (scores
  // in float64 on both), abundances and RMSE within 1e-6; the image spans two of the GPU's
  // chunks of 65536 pixels; uint16 with nodata and float32 with NaN; any strip height.
  void unmixing_data() {
    QTest::addColumn<int>("type");
    QTest::addColumn<int>("stripRows");
    QTest::newRow("uint16 with nodata") << int(GDT_UInt16) << 0;
    QTest::newRow("float32 with NaN, strips of 7") << int(GDT_Float32) << 7;
  }
  void unmixing() {
    QFETCH(int, type);
    QFETCH(int, stripRows);
    const QString dir = testing::tempDir();
    SynthOptions synth;
    synth.output = (dir + "/scene.tif").toStdString();
    synth.rows = 300;
    synth.cols = 250;
    synth.bands = 57;
    synth.type = GDALDataType(type);
    synth.endmembers = 6;
    synth.purePatch = 5;
    synth.snrDb = 35;
    TestFeedback feedback;
    synthesizeScene(synth, feedback);
    if (type == GDT_Float32) {  // a NaN inside the image
      DatasetPtr dataset(GDALDataset::Open(synth.output.c_str(), GDAL_OF_UPDATE | GDAL_OF_RASTER));
      float nan = std::numeric_limits<float>::quiet_NaN();
      QCOMPARE(dataset->GetRasterBand(3)->RasterIO(GF_Write, 40, 50, 1, 1, &nan, 1, 1, GDT_Float32,
                                                   0, 0, nullptr),
               CE_None);
    }
    struct Case {
      EndmemberMethod method;
      VcaProjection projection;
    };
    for (const Case c : {Case{EndmemberMethod::Atgp, VcaProjection::Auto},
                         Case{EndmemberMethod::Vca, VcaProjection::Auto},
                         Case{EndmemberMethod::Vca, VcaProjection::Subspace},
                         Case{EndmemberMethod::Nfindr, VcaProjection::Auto}}) {
      EndmemberOptions options;
      options.input = synth.output;
      options.search.method = c.method;
      options.search.projection = c.projection;
      options.search.count = 6;
      options.stripRows = stripRows;
      EndmemberResult results[2];
      for (int gpu = 0; gpu < 2; ++gpu) {
        options.device = gpu ? DeviceChoice::anyGpu() : DeviceChoice::cpu();
        options.output = (dir + (gpu ? "/gpu.csv" : "/cpu.csv")).toStdString();
        results[gpu] = runEndmembers(options, feedback);
      }
      QVERIFY(QString::fromStdString(results[1].backend).startsWith("gpu"));
      QCOMPARE(results[1].search.pixels, results[0].search.pixels);
      QCOMPARE(results[1].search.validPixels, results[0].search.validPixels);
      QCOMPARE(results[1].search.passes, results[0].search.passes);
    }
    for (const AbundanceMethod method :
         {AbundanceMethod::Fcls, AbundanceMethod::Nnls, AbundanceMethod::Ucls}) {
      AbundanceOptions options;
      options.input = synth.output;
      options.endmembers = (dir + "/cpu.csv").toStdString();
      options.method = method;
      options.outputType = OutputType::Float64;
      options.stripRows = stripRows;
      // The CPU, one GPU, and two workers sharing GPU 0's rows (the several-GPU path).
      const DeviceChoice devices[] = {DeviceChoice::cpu(), DeviceChoice::anyGpu(),
                                      DeviceChoice::sharedGpu(0, 2)};
      const char* names[] = {"cpu", "gpu", "gpus"};
      AbundanceResult results[3];
      for (int d = 0; d < 3; ++d) {
        options.device = devices[d];
        options.output = (dir + "/" + names[d] + ".tif").toStdString();
        options.rmseOutput = (dir + "/" + names[d] + "_rmse.tif").toStdString();
        options.htmlReport = d == 2 ? (dir + "/gpus.html").toStdString() : std::string();
        results[d] = runAbundances(options, feedback);
      }
      QVERIFY(QString::fromStdString(results[1].backend).startsWith("gpu"));
      QVERIFY2(QString::fromStdString(results[2].backend).startsWith("2 x gpu 0"),
               results[2].backend.c_str());
      QVERIFY(QFileInfo::exists(dir + "/gpus.html"));
      const testing::Cube cpu = testing::readCube((dir + "/cpu.tif").toStdString());
      const testing::Cube cpuRmse = testing::readCube((dir + "/cpu_rmse.tif").toStdString());
      for (int d = 1; d < 3; ++d) {
        QCOMPARE(results[d].validPixels, results[0].validPixels);
        const testing::Cube gpu = testing::readCube((dir + "/" + names[d] + ".tif").toStdString());
        const testing::Cube gpuRmse =
            testing::readCube((dir + "/" + names[d] + "_rmse.tif").toStdString());
        double worst = 0, worstRmse = 0;
        for (size_t i = 0; i < cpu.values.size(); ++i) {
          QCOMPARE(std::isnan(gpu.values[i]), std::isnan(cpu.values[i]));
          if (!std::isnan(cpu.values[i]))
            worst = std::max(worst, std::abs(gpu.values[i] - cpu.values[i]));
        }
        // Relative, above 1 DN: an endmember's own pixel has an RMSE of 0 up to rounding.
        for (size_t i = 0; i < cpuRmse.values.size(); ++i)
          if (!std::isnan(cpuRmse.values[i]))
            worstRmse = std::max(worstRmse, std::abs(gpuRmse.values[i] - cpuRmse.values[i]) /
                                                std::max(1.0, cpuRmse.values[i]));
        qInfo("%s %s vs CPU: abundances within %.2g, RMSE within %.2g relative",
              abundanceMethodName(method).c_str(), names[d], worst, worstRmse);
        QVERIFY2(worst <= 1e-6, qPrintable(QString::number(worst)));
        QVERIFY2(worstRmse <= 1e-6, qPrintable(QString::number(worstRmse)));
      }
    }
  }

  // The spectral angle mapper on the GPU: the CPU's classes exactly and angles within 1e-12 rad,
  // 40 library spectra (pixels of the scene, so that some angles are 0), over two of the GPU's
  // chunks, uint16 with nodata and float32 with NaN, any strip height, Float32 and Float64 angles.
  void spectralAngles_data() {
    QTest::addColumn<int>("type");
    QTest::addColumn<int>("stripRows");
    QTest::addColumn<int>("angleType");
    QTest::newRow("uint16 with nodata, Float64 angles")
        << int(GDT_UInt16) << 0 << int(OutputType::Float64);
    QTest::newRow("float32 with NaN, strips of 7, Float32 angles")
        << int(GDT_Float32) << 7 << int(OutputType::Float32);
  }
  void spectralAngles() {
    QFETCH(int, type);
    QFETCH(int, stripRows);
    QFETCH(int, angleType);
    const QString dir = testing::tempDir();
    testing::Cube cube = testing::smoothScene(300, 250, 57, 9, 3000);
    if (type == GDT_UInt16) {
      testing::roundValues(cube);
      cube.nodata.assign(57, 0);
      for (int64_t c = 5; c < 20; ++c) cube.at(30, c, 3) = 0;
    } else {
      cube.at(40, 50, 3) = std::numeric_limits<double>::quiet_NaN();
    }
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDALDataType(type));
    EndmemberTable library;
    for (int b = 0; b < 57; ++b) library.bandNames.push_back("band " + std::to_string(b + 1));
    for (int k = 0; k < 40; ++k) {
      const int64_t pixel = 1777 * k + 11;
      Endmember e;
      e.id = "pixel " + std::to_string(pixel);
      e.spectrum.assign(cube.values.begin() + pixel * 57, cube.values.begin() + (pixel + 1) * 57);
      library.endmembers.push_back(e);
    }
    saveFileAtomically((dir + "/library.csv").toStdString(), endmembersCsv(library), "LIBRARY");
    SamResult results[2];
    for (int gpu = 0; gpu < 2; ++gpu) {
      SamOptions options;
      options.input = (dir + "/in.tif").toStdString();
      options.library.library = (dir + "/library.csv").toStdString();
      options.maxAngle = 0.05;
      options.outputType = OutputType(angleType);
      options.stripRows = stripRows;
      options.device = gpu ? DeviceChoice::anyGpu() : DeviceChoice::cpu();
      const std::string name = dir.toStdString() + (gpu ? "/gpu" : "/cpu");
      options.output = name + ".tif";
      options.angleOutput = name + "_angle.tif";
      options.anglesOutput = name + "_angles.tif";
      TestFeedback feedback;
      results[gpu] = runSpectralAngles(options, feedback);
    }
    QVERIFY(QString::fromStdString(results[1].backend).startsWith("gpu"));
    QCOMPARE(results[1].validPixels, results[0].validPixels);
    QCOMPARE(results[1].classCounts, results[0].classCounts);
    QVERIFY(results[0].classCounts[0] > 0);  // some pixels beyond 0.05 rad
    QCOMPARE(testing::samplesOf(dir + "/gpu.tif"), testing::samplesOf(dir + "/cpu.tif"));
    for (const char* file : {"_angle.tif", "_angles.tif"}) {
      const std::vector<double> cpu = testing::samplesOf(dir + "/cpu" + file);
      const std::vector<double> gpu = testing::samplesOf(dir + "/gpu" + file);
      QCOMPARE(gpu.size(), cpu.size());
      double worst = 0;
      for (size_t i = 0; i < cpu.size(); ++i) {
        QCOMPARE(std::isnan(gpu[i]), std::isnan(cpu[i]));
        if (!std::isnan(cpu[i])) worst = std::max(worst, std::abs(gpu[i] - cpu[i]));
      }
      // Float32 angles: float64 angles equal to 1e-12, rounded to float32 (an ulp: 2.4e-7 below 2).
      const double tolerance = OutputType(angleType) == OutputType::Float64 ? 1e-12 : 2.4e-7;
      qInfo("SAM %s GPU vs CPU: within %.3g rad", file, worst);
      QVERIFY2(worst <= tolerance, qPrintable(QString::number(worst)));
    }
  }

  // Local RX's windows on the GPU against the CPU's, on random components (5, and 40: lanes past
  // the warp's 32 and 820 covariance entries) with invalid pixels, a constant patch (its pixels'
  // backgrounds singular: NaN on both, unless a noise ε regularises them) and a strip whose halo
  // rows end at the image's edge.
  void localRxWindows_data() {
    QTest::addColumn<int>("components");
    QTest::addColumn<int>("type");
    QTest::addColumn<double>("noise");
    QTest::newRow("5 components, Float64") << 5 << int(OutputType::Float64) << 0.0;
    QTest::newRow("40 components, Float32") << 40 << int(OutputType::Float32) << 0.0;
    QTest::newRow("5 components, noise ε") << 5 << int(OutputType::Float64) << 30.0;
  }
  void localRxWindows() {
    QFETCH(int, components);
    QFETCH(int, type);
    QFETCH(double, noise);
    const int k = components;
    const int64_t width = 61, rows = 40;  // buffered: image rows 20-59 of 60
    std::mt19937_64 random(5);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<double> values(static_cast<size_t>(width * rows * k));
    for (double& v : values) v = 100.0 * normal(random);
    std::vector<unsigned char> valid(static_cast<size_t>(width * rows), 1);
    for (int64_t p = 0; p < width * rows; p += 13) valid[p] = 0;
    for (int64_t r = 10; r < 22; ++r)
      for (int64_t c = 20; c < 35; ++c) std::fill_n(values.begin() + (r * width + c) * k, k, 7.0);
    WindowStrip strip;
    strip.components = values.data();
    strip.valid = valid.data();
    strip.componentCount = k;
    strip.width = width;
    strip.firstRow = 20;
    strip.rowCount = rows;
    strip.scoreRow = 24;
    strip.scoreRows = 36;  // to the image's last row: its windows end there
    WindowRule rule{9, 3, 0.0, OutputType(type)};
    rule.noise = noise;
    const size_t pixels = static_cast<size_t>(strip.scoreRows * width);
    std::vector<double> scores[2];
    for (int gpu = 0; gpu < 2; ++gpu) {
      std::unique_ptr<PixelKernels> kernels =
          gpu ? gpuRuntime(nullptr)->createPixelKernels(GpuKernelOptions{}) : makeCpuPixelKernels();
      std::vector<unsigned char> out(pixels * 8);
      kernels->windowScores(strip, rule, out.data());
      for (size_t p = 0; p < pixels; ++p)
        scores[gpu].push_back(OutputType(type) == OutputType::Float64
                                  ? reinterpret_cast<const double*>(out.data())[p]
                                  : reinterpret_cast<const float*>(out.data())[p]);
    }
    double worst = 0, largest = 0;
    int64_t unscored = 0;
    for (size_t p = 0; p < pixels; ++p) {
      QCOMPARE(std::isnan(scores[1][p]), std::isnan(scores[0][p]));
      if (std::isnan(scores[0][p])) {
        unscored += valid[p + 4 * width] ? 1 : 0;
        continue;
      }
      largest = std::max(largest, scores[0][p]);
      worst = std::max(worst, std::abs(scores[1][p] - scores[0][p]));
    }
    qInfo("local RX windows, GPU vs CPU: within %.3g of the largest score %.4g; %lld unscored",
          worst / largest, largest, static_cast<long long>(unscored));
    QCOMPARE(unscored > 0, noise == 0);
    const double tolerance = OutputType(type) == OutputType::Float64 ? 1e-12 : 1.2e-7;
    QVERIFY2(worst <= tolerance * largest, qPrintable(QString::number(worst / largest)));
  }

  // The whole job on the GPU (its PCA and its windows) against the CPU's: 4 components (the
  // scene's signal: well apart from the noise's), strips of 7 rows, ε the components' noise
  // variance (from each device's fit: the same within 1e-9).
  void localRxJob() {
    const QString dir = testing::tempDir();
    const testing::Cube cube = testing::smoothScene(120, 90, 30, 17, 3000);
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
    LocalRxResult results[2];
    for (int gpu = 0; gpu < 2; ++gpu) {
      LocalRxOptions options;
      options.input = (dir + "/in.tif").toStdString();
      options.output = (dir + (gpu ? "/gpu.tif" : "/cpu.tif")).toStdString();
      options.outputType = OutputType::Float64;
      options.components = 4;
      options.window = 11;
      options.guard = 3;
      options.stripRows = 7;
      options.device = gpu ? DeviceChoice::anyGpu() : DeviceChoice::cpu();
      TestFeedback feedback;
      results[gpu] = runLocalRx(options, feedback);
    }
    QVERIFY2(QString::fromStdString(results[1].backend).contains("windows on gpu"),
             results[1].backend.c_str());
    QVERIFY(results[0].noise > 0);
    QVERIFY2(std::abs(results[1].noise - results[0].noise) <= 1e-9 * results[0].noise,
             qPrintable(QString::number(results[1].noise / results[0].noise - 1)));
    const testing::ScoreDifference d = testing::scoreDifference(dir + "/cpu.tif", dir + "/gpu.tif");
    QVERIFY(d.sameShape);
    qInfo("local RX job, GPU vs CPU: within %.3g of the largest score", d.worst / d.largest);
    QVERIFY2(d.worst <= 1e-9 * d.largest, qPrintable(QString::number(d.worst / d.largest)));
  }

  // Per-column detection on the GPU against the CPU's: columns with their own offsets, nodata
  // pixels, a band constant in one column, a column with no valid pixel (unscored, NaN on both);
  // a device budget of 1 MiB so that strips go in several chunks; the same scores within 1e-9 of
  // the largest, the same NaNs, the same mean ε.
  void perColumnDetection_data() {
    QTest::addColumn<int>("fileType");
    QTest::addColumn<int>("method");
    QTest::addColumn<bool>("absorption");
    QTest::addColumn<int>("outputType");
    QTest::newRow("rx uint16, noise ε")
        << int(GDT_UInt16) << int(DetectMethod::Rx) << false << int(OutputType::Float64);
    QTest::newRow("mf float32, absorption")
        << int(GDT_Float32) << int(DetectMethod::MatchedFilter) << true << int(OutputType::Float64);
    QTest::newRow("ace int16, Float32 scores")
        << int(GDT_Int16) << int(DetectMethod::Ace) << false << int(OutputType::Float32);
  }
  void perColumnDetection() {
    QFETCH(int, fileType);
    QFETCH(int, method);
    QFETCH(bool, absorption);
    QFETCH(int, outputType);
    constexpr int kBands = 30;
    constexpr int64_t kRows = 150, kCols = 40;
    testing::Cube cube = testing::correlatedCube(kRows, kCols, kBands, 91, 3000.0, 60.0);
    std::mt19937_64 random(5);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (int64_t c = 0; c < kCols; ++c) {
      std::vector<double> offset(kBands);
      for (double& v : offset) v = 300 * normal(random);
      for (int64_t r = 0; r < kRows; ++r)
        for (int b = 0; b < kBands; ++b) cube.at(r, c, b) += offset[b];
    }
    testing::roundValues(cube);
    cube.nodata.assign(kBands, 0);
    for (int64_t r = 0; r < kRows; ++r) {
      cube.at(r, 3, 2) = 777;
      cube.at(r, 17, 5) = 0;  // column 17: no valid pixel
    }
    for (int k = 0; k < 9; ++k) cube.at(5 + 11 * k, 2 + 4 * k, k % 3) = 0;
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDALDataType(fileType));
    ColumnDetectOptions options;
    options.input = (dir + "/in.tif").toStdString();
    options.method = DetectMethod(method);
    options.absorption = absorption;
    options.outputType = OutputType(outputType);
    options.stripRows = 64;
    if (options.method != DetectMethod::Rx) {
      Target target{"target", {}};
      for (int b = 0; b < kBands; ++b)
        target.spectrum.push_back(absorption ? std::exp(-0.5 * std::pow((b - 20) / 3.0, 2))
                                             : cube.values[int64_t{1234} * kBands + b]);
      options.targetTable.targets.push_back(target);
      target.name = "second";
      for (int b = 0; b < kBands; ++b) target.spectrum[b] = cube.values[int64_t{4321} * kBands + b];
      if (!absorption) options.targetTable.targets.push_back(target);
    }
    ColumnDetectResult results[2];
    for (int gpu = 0; gpu < 2; ++gpu) {
      options.output = (dir + (gpu ? "/gpu.tif" : "/cpu.tif")).toStdString();
      options.device = gpu ? parseDevice("gpu") : DeviceChoice::cpu();
      options.gpuMemoryBytes = gpu ? int64_t{1} << 20 : 0;
      TestFeedback feedback;
      results[gpu] = runColumnDetection(options, feedback);
    }
    QVERIFY2(QString::fromStdString(results[1].backend).contains("gpu"),
             results[1].backend.c_str());
    QCOMPARE(results[1].columnsUnscored, int64_t{1});
    QCOMPARE(results[1].validPixels, results[0].validPixels);
    QVERIFY(std::abs(results[1].meanEpsilon - results[0].meanEpsilon) <=
            1e-9 * results[0].meanEpsilon);
    const testing::ScoreDifference d = testing::scoreDifference(dir + "/cpu.tif", dir + "/gpu.tif");
    QVERIFY(d.sameShape);
    const double tolerance = OutputType(outputType) == OutputType::Float64 ? 1e-9 : 1.2e-7;
    qInfo(
        "per column, GPU vs CPU: within %.3g of the largest score %.4g; upload %.3f s, "
        "moments %.3f s, scores %.3f s",
        d.worst / d.largest, d.largest, results[1].device.upload, results[1].device.moments,
        results[1].device.projection);
    QVERIFY2(d.worst <= tolerance * d.largest, qPrintable(QString::number(d.worst / d.largest)));
    QVERIFY(!results[1].bandMajor);
    // The same cube band-interleaved: its strips go to the GPU band-major, chunk by chunk (1 MiB),
    // and give the same bits.
    testing::writeCube(cube, (dir + "/band.tif").toStdString(), GDALDataType(fileType), "GTiff",
                       {"INTERLEAVE=BAND"});
    options.input = (dir + "/band.tif").toStdString();
    options.output = (dir + "/band-gpu.tif").toStdString();
    TestFeedback feedback;
    QVERIFY(runColumnDetection(options, feedback).bandMajor);
    const std::vector<double> band = testing::samplesOf(dir + "/band-gpu.tif");
    const std::vector<double> pixel = testing::samplesOf(dir + "/gpu.tif");
    QCOMPARE(band.size(), pixel.size());
    QVERIFY(std::memcmp(band.data(), pixel.data(), pixel.size() * sizeof(double)) == 0);
  }
};

QTEST_GUILESS_MAIN(GpuPixelTests)
#include "test_gpu_pixels.moc"
