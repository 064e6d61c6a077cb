// The covariance jobs (PCA, MNF, apply, denoise, inverse, detection) on the CUDA backend against
// the CPU backend and the float64 reference: eigenvalues within 1e-6 relative, components within
// 1e-4 of their standard deviation; several GPUs, the fallback to the CPU. Skipped (QSKIP, with
// the reason) where no CUDA device is usable; run on the GPU machine. The per-pixel jobs' GPU
// tests are test_gpu_pixels.cpp's.

#include "DeviceOption.h"
#include "GpuTestSupport.h"
#include "TestFeedback.h"
#include "TestSupport.h"
#include "core/Error.h"
#include "core/Samples.h"
#include "detect/ColumnDetectJob.h"
#include "detect/DetectJob.h"
#include "detect/LocalRxJob.h"
#include "detect/SamJob.h"
#include "io/TextFile.h"
#include "pca/PcaJob.h"
#include "pixels/PixelKernels.h"
#include "projection/PcaKernels.h"
#include "run/GpuRuntime.h"
#include "run/JobGroup.h"
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

namespace {

PcaOptions optionsFor(const QString& input, const QString& output, const std::string& device) {
  PcaOptions options;
  options.input = input.toStdString();
  options.output = output.toStdString();
  options.device = parseDevice(device);
  options.components = kAllComponents;
  return options;
}

DetectOptions detectOptionsFor(const QString& input, const QString& output,
                               const std::string& device) {
  DetectOptions options;
  options.input = input.toStdString();
  options.output = output.toStdString();
  options.device = parseDevice(device);
  return options;
}

// The job a test row names, by the workers of `group`: "pca" (an MNF with options.noise),
// "denoise" or "rx" (every component).
CovarianceResult runNamedJob(const QString& job, const PcaOptions& options, Feedback& feedback,
                             JobGroup& group) {
  if (job == "denoise") return runDenoise(options, feedback, group);
  if (job != "rx") return runPca(options, feedback, group);
  DetectOptions rx;
  static_cast<CovarianceOptions&>(rx) = options;
  return runDetection(rx, feedback, group);
}

struct Run {
  PcaResult result;
  testing::Cube written;
};

Run run(const PcaOptions& options) {
  TestFeedback feedback;
  Run out{runPca(options, feedback), {}};
  out.written = testing::readCube(options.output);
  return out;
}

// GPU against CPU: the same valid pixels and components, eigenvalues within 1e-6 relative, each
// component within 1e-4 of its standard deviation (Byte: at most one step apart).
void compareRuns(const Run& cpu, const Run& gpu) {
  QVERIFY2(QString::fromStdString(gpu.result.backend).contains("gpu"), gpu.result.backend.c_str());
  QVERIFY(QString::fromStdString(cpu.result.backend).startsWith("cpu"));
  QCOMPARE(gpu.result.model.validPixels, cpu.result.model.validPixels);
  QCOMPARE(gpu.result.components, cpu.result.components);
  QCOMPARE(gpu.result.model.constantBands, cpu.result.model.constantBands);
  double worstEigen = 0, worstComponent = 0;
  for (int k = 0; k < cpu.result.model.componentCount(); ++k) {
    const double relative =
        std::abs(gpu.result.model.eigenvalues[k] / cpu.result.model.eigenvalues[k] - 1);
    worstEigen = std::max(worstEigen, relative);
    if (relative > 1e-6)
      QFAIL(qPrintable(QString("eigenvalue %1: GPU %2, CPU %3")
                           .arg(k + 1)
                           .arg(gpu.result.model.eigenvalues[k], 0, 'g', 17)
                           .arg(cpu.result.model.eigenvalues[k], 0, 'g', 17)));
  }
  const bool byte = cpu.result.outputType == OutputType::Byte;
  for (int k = 0; k < cpu.result.components; ++k) {
    const std::vector<double> a = testing::bandValues(cpu.written, k);
    const std::vector<double> b = testing::bandValues(gpu.written, k);
    double sum = 0, sum2 = 0, worst = 0;
    int64_t n = 0;
    for (size_t p = 0; p < a.size(); ++p) {
      const bool nodataA = a[p] == cpu.written.nodata[k] || std::isnan(a[p]);
      const bool nodataB = b[p] == gpu.written.nodata[k] || std::isnan(b[p]);
      QCOMPARE(nodataB, nodataA);
      if (nodataA) continue;
      sum += a[p];
      sum2 += a[p] * a[p];
      ++n;
      worst = std::max(worst, std::abs(a[p] - b[p]));
    }
    const double mean = sum / n;
    const double stddev = std::sqrt(std::max(0.0, sum2 / n - mean * mean));
    if (byte) {
      QVERIFY2(worst <= 1.0,
               qPrintable(QString("Byte component %1 differs by %2").arg(k + 1).arg(worst)));
      continue;
    }
    worstComponent = std::max(worstComponent, worst / stddev);
    if (!(worst <= 1e-4 * stddev))
      QFAIL(qPrintable(
          QString("component %1: max |GPU - CPU| = %2, std %3").arg(k + 1).arg(worst).arg(stddev)));
  }
  qInfo("GPU vs CPU: worst eigenvalue %.2e relative, worst component %.2e of its std", worstEigen,
        worstComponent);
}

// GPU against the float64 reference of the cube as stored in `input`: eigenvalues within 1e-6
// relative, components within 1e-4 of their standard deviation.
void compareWithReference(const QString& input, const Run& gpu) {
  const testing::Cube cube = testing::readCube(input.toStdString());
  const testing::Reference ref = testing::referencePca(cube);
  QCOMPARE(gpu.result.model.validPixels, ref.valid);
  double worst = 0;
  for (size_t k = 0; k < ref.eigenvalues.size(); ++k)
    worst = std::max(worst, std::abs(gpu.result.model.eigenvalues[k] / ref.eigenvalues[k] - 1));
  QVERIFY2(worst <= 1e-6, qPrintable(QString("eigenvalues %1 relative").arg(worst)));
  double worstComponent = 0;
  for (int k = 0; k < gpu.result.components; ++k) {
    const std::vector<double> values = testing::bandValues(gpu.written, k);
    const std::vector<double> expected = testing::referenceComponent(cube, ref, k);
    double sum2 = 0, largest = 0;
    int64_t n = 0;
    for (size_t p = 0; p < values.size(); ++p) {
      if (!std::isfinite(expected[p])) continue;
      sum2 += expected[p] * expected[p];  // reference components have mean zero
      ++n;
      largest = std::max(largest, std::abs(values[p] - expected[p]));
    }
    worstComponent = std::max(worstComponent, largest / std::sqrt(sum2 / n));
  }
  QVERIFY2(worstComponent <= 1e-4,
           qPrintable(QString("components differ by %1 of their std").arg(worstComponent)));
  qInfo("GPU vs float64 reference: eigenvalues %.2e relative, components %.2e of their std", worst,
        worstComponent);
}

// The message of the [DEVICE] error the run must end with (empty, and the test failed, if none).
QString deviceError(const PcaOptions& options) {
  TestFeedback feedback;
  try {
    runPca(options, feedback);
  } catch (const Error& e) {
    if (e.parameter() == "DEVICE") return e.what();
    qWarning("error %s: %s", e.parameter().c_str(), e.what());
  }
  QTest::qFail("expected a [DEVICE] error", __FILE__, __LINE__);
  return {};
}

// The backend's moments against the long double reference: counts and ranges exact, means to
// 1e-14 and co-moments to 1e-12 relative.
void compareMomentsWithReference(const Moments& m, const std::vector<double>& values,
                                 const std::vector<unsigned char>& valid, int bands,
                                 const char* what) {
  const Moments ref = testing::referenceMoments(values, valid, bands);
  QCOMPARE(m.count, ref.count);
  QCOMPARE(m.minimum, ref.minimum);
  QCOMPARE(m.maximum, ref.maximum);
  QVERIFY(testing::maxRelativeDifference(m.mean, ref.mean) < 1e-14);
  const double error = testing::comomentError(m, ref);
  QVERIFY2(error < 1e-12, qPrintable(QString("co-moments %1 relative").arg(error)));
  qInfo("GPU %s vs long double reference: co-moments %.2e relative", what, error);
}

}  // namespace

class GpuTests : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    const QString whyNot = testing::whyNoGpu();
    if (!whyNot.isEmpty()) QSKIP(qPrintable(whyNot));
  }

  // The moments of 8/16-bit integers (exact int8 digits on the tensor cores) at both ends of the
  // type's range, so deviations reach +-65535 for UInt16 and Int16, with invalid pixels and
  // band and pixel counts that fill no tile, against a long double reference.
  void exactIntegerMomentsAtFullRange_data() {
    QTest::addColumn<int>("type");
    QTest::newRow("Byte") << int(GDT_Byte);
    QTest::newRow("Int16") << int(GDT_Int16);
    QTest::newRow("UInt16") << int(GDT_UInt16);
  }
  void exactIntegerMomentsAtFullRange() {
    QFETCH(int, type);
    const SampleType sampleType = sampleTypeOf(static_cast<GDALDataType>(type));
    const int bands = 37;
    const int64_t pixels = 3001;
    withSampleType(sampleType, [&](auto sample) {
      using T = decltype(sample);
      const double lowest = std::numeric_limits<T>::lowest();
      const double highest = std::numeric_limits<T>::max();
      std::mt19937_64 random(11);
      std::uniform_real_distribution<double> offset(0.0, 0.05 * (highest - lowest));
      std::vector<T> samples(static_cast<size_t>(pixels) * bands);
      std::vector<double> values(samples.size());
      std::vector<unsigned char> valid(pixels);
      for (int64_t p = 0; p < pixels; ++p) {
        const bool high = random() % 2 == 0;
        for (int b = 0; b < bands; ++b) {
          double v =
              high ? highest - 1 - std::floor(offset(random)) : lowest + std::floor(offset(random));
          if (p == 1) v = b % 2 ? lowest : highest - 1;  // the extremes themselves
          values[p * bands + b] = v;
        }
        valid[p] = random() % 20 != 0;
        if (!valid[p]) values[p * bands] = highest;  // the nodata value of band 1
      }
      for (size_t k = 0; k < samples.size(); ++k) samples[k] = static_cast<T>(values[k]);
      std::vector<double> nodata(bands, NAN);
      nodata[0] = highest;
      std::string whyNot;
      std::unique_ptr<PcaKernels> gpu = gpuRuntime(&whyNot)->createPcaKernels(GpuKernelOptions{});
      gpu->prepare(CubeLayout{pixels, bands, sampleType, pixels, 1});
      gpu->accumulateMoments(StripView{samples.data(), sampleType, pixels, bands, nodata.data()});
      compareMomentsWithReference(gpu->takeMoments(bands), values, valid, bands, "integer moments");
    });
  }

  // A resident cube fed in low strips: the moments run on whole chunks of strips as they arrive
  // (the chunks' ends fall inside strips, the last chunk is short), the first strips hold no
  // valid pixel. Against a long double reference.
  void momentsOfLowStripsOverSeveralChunks_data() {
    QTest::addColumn<int>("type");
    QTest::newRow("UInt16 (int8 digits)") << int(GDT_UInt16);
    QTest::newRow("Float32 (float64 GEMM)") << int(GDT_Float32);
  }
  void momentsOfLowStripsOverSeveralChunks() {
    QFETCH(int, type);
    const SampleType sampleType = sampleTypeOf(static_cast<GDALDataType>(type));
    const int bands = 64;  // float64 chunks of 2^19 pixels, digit chunks of 2^18
    const int64_t cols = 601, rows = 1000, stripRows = 7, pixels = rows * cols;
    const std::vector<double> nodata(bands, 0.0);
    withSampleType(sampleType, [&](auto sample) {
      using T = decltype(sample);
      std::mt19937_64 random(5);
      std::normal_distribution<double> normal;
      std::vector<T> samples(static_cast<size_t>(pixels) * bands);
      std::vector<double> values(samples.size());
      std::vector<unsigned char> valid(pixels);
      for (int64_t p = 0; p < pixels; ++p) {
        valid[p] = p >= 3 * stripRows * cols && random() % 50 != 0;
        const double a = normal(random);
        for (int b = 0; b < bands; ++b) {
          const double v = std::clamp(
              std::round(20000 + 3000 * a * (1 + b % 5) + 40 * normal(random)), 1.0, 65535.0);
          values[p * bands + b] = valid[p] ? v : 0.0;
          samples[p * bands + b] = static_cast<T>(values[p * bands + b]);
        }
      }
      std::string whyNot;
      std::unique_ptr<PcaKernels> gpu = gpuRuntime(&whyNot)->createPcaKernels(GpuKernelOptions{});
      QVERIFY(gpu->prepare(CubeLayout{pixels, bands, sampleType, stripRows * cols, 1}));
      for (int64_t row = 0; row < rows; row += stripRows) {
        const int64_t n = std::min(stripRows, rows - row) * cols;
        gpu->accumulateMoments(StripView{samples.data() + row * cols * bands, sampleType, n, bands,
                                         nodata.data(), cols, row * cols});
      }
      compareMomentsWithReference(gpu->takeMoments(bands), values, valid, bands,
                                  "moments of 7-row strips");
    });
  }

  // Band-major strips (as a band-interleaved file holds them) given to the PCA and unmixing
  // kernels: the same moments and projections, bit for bit, as the same strips pixel-interleaved;
  // the cube resident on the device or streamed through its slots, strips of 7 rows.
  void bandMajorStrips_data() {
    QTest::addColumn<int>("type");
    QTest::addColumn<int>("gpuMiB");
    QTest::newRow("UInt16, resident") << int(GDT_UInt16) << 0;
    QTest::newRow("UInt16, streamed") << int(GDT_UInt16) << 48;
    QTest::newRow("Float32, streamed") << int(GDT_Float32) << 48;
  }
  void bandMajorStrips() {
    QFETCH(int, type);
    QFETCH(int, gpuMiB);
    const SampleType sampleType = sampleTypeOf(static_cast<GDALDataType>(type));
    const int bands = 64, components = 3;
    const int64_t cols = 601, rows = 1000, stripRows = 7, pixels = rows * cols;
    const std::vector<double> nodata(bands, 0.0);
    withSampleType(sampleType, [&](auto sample) {
      using T = decltype(sample);
      std::mt19937_64 random(13);
      std::normal_distribution<double> normal;
      std::vector<T> samples(static_cast<size_t>(pixels) * bands);
      for (int64_t p = 0; p < pixels; ++p) {
        const double a = normal(random);
        const bool valid = p >= 2 * cols + 5 && random() % 50 != 0;
        for (int b = 0; b < bands; ++b)
          samples[p * bands + b] = static_cast<T>(
              valid ? std::round(20000 + 3000 * a * (1 + b % 5) + 40 * normal(random)) : 0.0);
      }
      // Each strip's samples band after band, strip after strip.
      std::vector<T> bandMajor(samples.size());
      for (int64_t row = 0; row < rows; row += stripRows) {
        const int64_t n = std::min(stripRows, rows - row) * cols;
        const T* in = samples.data() + row * cols * bands;
        T* out = bandMajor.data() + row * cols * bands;
        for (int64_t p = 0; p < n; ++p)
          for (int b = 0; b < bands; ++b) out[b * n + p] = in[p * bands + b];
      }
      const GpuKernelOptions device{0, int64_t{gpuMiB} << 20};
      auto strips = [&](bool major, const std::function<void(const StripView&)>& take) {
        for (int64_t row = 0; row < rows; row += stripRows) {
          const int64_t n = std::min(stripRows, rows - row) * cols;
          const T* data = (major ? bandMajor : samples).data() + row * cols * bands;
          take(StripView{data, sampleType, n, bands, nodata.data(), cols, row * cols, major});
        }
      };
      std::vector<double> weights(static_cast<size_t>(bands) * components);
      for (double& w : weights) w = normal(random);
      std::string whyNot;
      Moments pca[2], unmixing[2];
      std::vector<float> projected[2];
      for (const bool major : {false, true}) {
        std::unique_ptr<PcaKernels> kernels = gpuRuntime(&whyNot)->createPcaKernels(device);
        QVERIFY(kernels->takesBandMajor());
        const bool resident = kernels->prepare(
            CubeLayout{pixels, bands, sampleType, stripRows * cols, components, major});
        QCOMPARE(resident, gpuMiB == 0);
        strips(major, [&](const StripView& strip) { kernels->accumulateMoments(strip); });
        pca[major] = kernels->takeMoments(bands);
        Projection projection;
        projection.bands = bands;
        projection.components = components;
        projection.center = pca[major].mean;
        projection.weights = weights;
        OutputEncoding encoding;
        encoding.nodata = -1;
        projected[major].resize(static_cast<size_t>(pixels) * components);
        strips(major, [&](const StripView& strip) {
          StripView again = strip;
          if (resident) again.data = nullptr;  // the device's copy
          kernels->project(again, projection, encoding,
                           projected[major].data() + strip.firstPixel * components);
        });
        std::unique_ptr<PixelKernels> unmix = gpuRuntime(&whyNot)->createPixelKernels(device);
        QVERIFY(unmix->takesBandMajor());
        unmix->prepare(CubeLayout{pixels, bands, sampleType, stripRows * cols});
        strips(major, [&](const StripView& strip) { unmix->accumulateMoments(strip); });
        unmixing[major] = unmix->takeMoments(bands);
      }
      for (const Moments* m : {pca, unmixing}) {
        QCOMPARE(m[1].count, m[0].count);
        QVERIFY(m[0].count > pixels / 2);
        QCOMPARE(m[1].mean, m[0].mean);
        QCOMPARE(m[1].comoment, m[0].comoment);
        QCOMPARE(m[1].minimum, m[0].minimum);
        QCOMPARE(m[1].maximum, m[0].maximum);
      }
      QVERIFY(std::memcmp(projected[1].data(), projected[0].data(),
                          projected[0].size() * sizeof(float)) == 0);
    });
  }

  void everyInputType_data() {
    QTest::addColumn<int>("type");
    QTest::addColumn<double>("mean");
    QTest::addColumn<double>("spread");
    QTest::newRow("Byte") << int(GDT_Byte) << 120.0 << 20.0;
    QTest::newRow("Int16") << int(GDT_Int16) << 5000.0 << 200.0;
    QTest::newRow("UInt16") << int(GDT_UInt16) << 30000.0 << 500.0;
    // Spreads stay moderate: a Float32 output cannot hold the smallest components of a cube with
    // a spread of thousands to 1e-4 of their std (on the CPU either).
    QTest::newRow("Int32") << int(GDT_Int32) << 1e6 << 200.0;
    QTest::newRow("UInt32") << int(GDT_UInt32) << 3e6 << 200.0;
    QTest::newRow("Float32") << int(GDT_Float32) << 5000.0 << 200.0;
    QTest::newRow("Float64, huge means") << int(GDT_Float64) << 1e7 << 200.0;
  }
  void everyInputType() {
    QFETCH(int, type);
    QFETCH(double, mean);
    QFETCH(double, spread);
    testing::Cube cube = testing::correlatedCube(67, 45, 12, 7 + type, mean, spread);
    if (type != GDT_Float32 && type != GDT_Float64) testing::roundValues(cube);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDALDataType(type));
    const Run cpu = run(optionsFor(dir + "/in.tif", dir + "/cpu.tif", "cpu"));
    const Run gpu = run(optionsFor(dir + "/in.tif", dir + "/gpu.tif", "gpu"));
    QVERIFY(gpu.result.deviceResident);
    compareRuns(cpu, gpu);
    compareWithReference(dir + "/in.tif", gpu);
  }

  void outputTypes_data() {
    QTest::addColumn<int>("outputType");
    QTest::newRow("Float64") << int(OutputType::Float64);
    QTest::newRow("Byte") << int(OutputType::Byte);
  }
  void outputTypes() {
    QFETCH(int, outputType);
    testing::Cube cube = testing::correlatedCube(50, 41, 9, 3);
    testing::roundValues(cube);
    cube.nodata.assign(9, -9999);
    for (int b = 0; b < 9; ++b) cube.at(2, 2, b) = -9999;
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Int16);
    PcaOptions options = optionsFor(dir + "/in.tif", dir + "/cpu.tif", "cpu");
    options.components = 5;
    options.outputType = OutputType(outputType);
    const Run cpu = run(options);
    options.output = (dir + "/gpu.tif").toStdString();
    options.device = parseDevice("gpu");
    const Run gpu = run(options);
    compareRuns(cpu, gpu);
  }

  void nodataAndNan_data() {
    QTest::addColumn<int>("fileType");
    QTest::newRow("float32, NaN, Inf and -9999") << int(GDT_Float32);
    QTest::newRow("uint16, 65535") << int(GDT_UInt16);
  }
  void nodataAndNan() {
    QFETCH(int, fileType);
    testing::Cube cube = testing::correlatedCube(45, 37, 10, 11);
    testing::roundValues(cube);
    const double nodata = fileType == GDT_UInt16 ? 65535.0 : -9999.0;
    cube.nodata.assign(10, nodata);
    for (int64_t c = 0; c < cube.cols; ++c)
      for (int b = 0; b < 10; ++b) cube.at(0, c, b) = nodata;  // a nodata first row
    cube.at(4, 4, 2) = nodata;
    for (int64_t c = 0; c < cube.cols; ++c) cube.at(20, c, 5) = nodata;
    if (fileType == GDT_Float32) {
      cube.at(7, 7, 0) = NAN;
      cube.at(8, 1, 7) = INFINITY;
    }
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDALDataType(fileType));
    PcaOptions options = optionsFor(dir + "/in.tif", dir + "/cpu.tif", "cpu");
    options.stripRows = 1;  // the first strip has no valid pixel
    const Run cpu = run(options);
    options.output = (dir + "/gpu.tif").toStdString();
    options.device = parseDevice("gpu");
    const Run gpu = run(options);
    compareRuns(cpu, gpu);
    compareWithReference(dir + "/in.tif", gpu);
  }

  // MNF: the signal and noise moments on the GPU (the noise's differences made there, from the
  // resident cube or each streamed strip and the row above it); the same as the CPU's.
  void mnf_data() {
    QTest::addColumn<int>("fileType");
    QTest::addColumn<int>("stripRows");
    QTest::addColumn<int>("gpuMiB");
    QTest::addColumn<int>("workers");
    QTest::newRow("uint16 with nodata, resident") << int(GDT_UInt16) << 0 << 0 << 1;
    QTest::newRow("float32, streamed in strips of 5 rows") << int(GDT_Float32) << 5 << 10 << 1;
    QTest::newRow("uint16, three workers on the GPU") << int(GDT_UInt16) << 7 << 0 << 3;
  }
  void mnf() {
    QFETCH(int, fileType);
    QFETCH(int, stripRows);
    QFETCH(int, gpuMiB);
    QFETCH(int, workers);
    testing::Cube cube = testing::smoothScene(300, 200, 14, 9);
    if (fileType == GDT_UInt16) {
      testing::roundValues(cube);
      cube.nodata.assign(14, 0);
      for (int64_t c = 5; c < 20; ++c) cube.at(30, c, 3) = 0;
    }
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDALDataType(fileType));
    PcaOptions options = optionsFor(dir + "/in.tif", dir + "/cpu.tif", "cpu");
    options.noise = NoiseDirection::LowerRight;
    options.stripRows = stripRows;
    options.outputType = OutputType::Float64;
    const Run cpu = run(options);
    options.output = (dir + "/gpu.tif").toStdString();
    options.device = parseDevice("gpu");
    options.gpuMemoryBytes = int64_t{gpuMiB} << 20;
    Run gpu;
    if (workers == 1) {
      gpu = run(options);
      QCOMPARE(gpu.result.deviceResident, gpuMiB == 0);
    } else {
      ThreadGroup threads(workers);
      threads.run([&](JobGroup& group) {
        TestFeedback mine;
        PcaResult result = runPca(options, mine, group);
        if (group.rank() == 0) gpu.result = result;
      });
      gpu.written = testing::readCube(options.output);
    }
    QCOMPARE(gpu.result.model.transform, Transform::Mnf);
    compareRuns(cpu, gpu);
  }

  // Denoising and the inverse transform on the GPU (projection, rebuild and encoding there): the
  // CPU's image, integers at most one step apart (rounding ties), floats to 1e-9 of the largest.
  void denoiseAndInverse_data() {
    QTest::addColumn<int>("fileType");
    QTest::addColumn<bool>("mnf");
    QTest::addColumn<int>("outputType");
    QTest::addColumn<int>("gpuMiB");
    QTest::addColumn<int>("workers");
    QTest::newRow("pca uint16 with nodata, resident, to UInt16")
        << int(GDT_UInt16) << false << int(OutputType::SameAsInput) << 0 << 1;
    QTest::newRow("mnf float32 streamed, to Float64")
        << int(GDT_Float32) << true << int(OutputType::Float64) << 10 << 1;
    QTest::newRow("mnf byte, to Byte")
        << int(GDT_Byte) << true << int(OutputType::SameAsInput) << 0 << 1;
    QTest::newRow("pca int16, three workers, to Int16")
        << int(GDT_Int16) << false << int(OutputType::SameAsInput) << 0 << 3;
  }
  void denoiseAndInverse() {
    QFETCH(int, fileType);
    QFETCH(bool, mnf);
    QFETCH(int, outputType);
    QFETCH(int, gpuMiB);
    QFETCH(int, workers);
    testing::Cube cube = testing::smoothScene(300, 200, 14, 4, fileType == GDT_Byte ? 120 : 3000);
    if (fileType != GDT_Float32) {
      testing::roundValues(cube);
      cube.nodata.assign(14, fileType == GDT_UInt16 ? 0 : 255);
      for (int64_t c = 5; c < 20; ++c) cube.at(30, c, 3) = cube.nodata[0];
    }
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDALDataType(fileType));
    PcaOptions options = optionsFor(dir + "/in.tif", dir + "/cpu.tif", "cpu");
    options.components = 4;
    if (mnf) options.noise = NoiseDirection::LowerRight;
    options.outputType = OutputType(outputType);
    options.statsJson = (dir + "/fit.json").toStdString();
    TestFeedback feedback;
    runDenoise(options, feedback);
    options.output = (dir + "/gpu.tif").toStdString();
    options.device = parseDevice("gpu");
    options.gpuMemoryBytes = int64_t{gpuMiB} << 20;
    if (gpuMiB > 0) options.stripRows = 5;  // strips that fit the small budget
    options.statsJson.clear();
    ThreadGroup threads(workers);
    threads.run([&](JobGroup& group) {
      TestFeedback mine;
      const PcaResult result = runDenoise(options, mine, group);
      QVERIFY(QString::fromStdString(result.backend).contains("gpu"));
    });
    // The inverse of the CPU fit's first four components, written as Float32, on the GPU.
    PcaOptions components = optionsFor(dir + "/in.tif", dir + "/components.tif", "cpu");
    components.savedTransform = (dir + "/fit.json").toStdString();
    components.components = 0;  // the four the fit kept
    runApply(components, feedback);
    PcaOptions inverse = optionsFor(dir + "/components.tif", dir + "/inverse.tif", "gpu");
    inverse.savedTransform = components.savedTransform;
    inverse.components = 0;
    inverse.outputType = OutputType(outputType);
    runInverse(inverse, feedback);
    const testing::Cube cpu = testing::readCube(dir.toStdString() + "/cpu.tif");
    const bool integer =
        OutputType(outputType) == OutputType::SameAsInput && fileType != GDT_Float32;
    for (const char* file : {"/gpu.tif", "/inverse.tif"}) {
      const testing::Cube gpu = testing::readCube(dir.toStdString() + file);
      QCOMPARE(gpu.values.size(), cpu.values.size());
      double largest = 0, worst = 0;
      for (size_t i = 0; i < cpu.values.size(); ++i) {
        QCOMPARE(std::isnan(gpu.values[i]), std::isnan(cpu.values[i]));
        if (std::isnan(cpu.values[i])) continue;
        largest = std::max(largest, std::abs(cpu.values[i]));
        worst = std::max(worst, std::abs(gpu.values[i] - cpu.values[i]));
      }
      // From Float32 components, the inverse is as close as float32 rounding lets it be.
      const double tolerance = integer ? 1.0 : (file[1] == 'i' ? 1e-6 : 1e-9) * largest;
      QVERIFY2(worst <= tolerance,
               qPrintable(
                   QString("%1: largest difference %2 (of %3)").arg(file).arg(worst).arg(largest)));
      qInfo("%s: GPU vs CPU largest difference %.3g of %.3g", file, worst, largest);
    }
  }

  // Detection on the GPU (RX and ACE scored there, MF and CEM projected there): the CPU's scores
  // within 1e-9 of the largest, the same nodata, resident or streamed, one worker or three.
  void detection_data() {
    QTest::addColumn<int>("fileType");
    QTest::addColumn<int>("method");
    QTest::addColumn<int>("gpuMiB");
    QTest::addColumn<int>("workers");
    QTest::newRow("rx uint16 with nodata, resident")
        << int(GDT_UInt16) << int(DetectMethod::Rx) << 0 << 1;
    QTest::newRow("ace float32 streamed") << int(GDT_Float32) << int(DetectMethod::Ace) << 10 << 1;
    QTest::newRow("mf int16, three workers")
        << int(GDT_Int16) << int(DetectMethod::MatchedFilter) << 0 << 3;
    QTest::newRow("cem float64") << int(GDT_Float64) << int(DetectMethod::Cem) << 0 << 1;
    QTest::newRow("rx float32, 5 components, streamed")
        << int(GDT_Float32) << int(DetectMethod::Rx) << 10 << 1;
  }
  void detection() {
    QFETCH(int, fileType);
    QFETCH(int, method);
    QFETCH(int, gpuMiB);
    QFETCH(int, workers);
    testing::Cube cube = testing::smoothScene(300, 200, 14, 6, 3000);
    if (fileType != GDT_Float32 && fileType != GDT_Float64) {
      testing::roundValues(cube);
      cube.nodata.assign(14, 0);
      for (int64_t c = 5; c < 20; ++c) cube.at(30, c, 3) = 0;
    }
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDALDataType(fileType));
    DetectOptions options = detectOptionsFor(dir + "/in.tif", dir + "/cpu.tif", "cpu");
    options.outputType = OutputType::Float64;
    options.detector.method = DetectMethod(method);
    if (gpuMiB > 0 && options.detector.method == DetectMethod::Rx) options.detector.components = 5;
    if (options.detector.method != DetectMethod::Rx)
      for (const int64_t pixel : {int64_t{1234}, int64_t{40000}}) {
        Target target{"pixel " + std::to_string(pixel), {}};
        for (int b = 0; b < 14; ++b) target.spectrum.push_back(cube.values[pixel * 14 + b]);
        options.targetTable.targets.push_back(target);
      }
    TestFeedback feedback;
    runDetection(options, feedback);
    options.output = (dir + "/gpu.tif").toStdString();
    options.device = parseDevice("gpu");
    options.gpuMemoryBytes = int64_t{gpuMiB} << 20;
    if (gpuMiB > 0) options.stripRows = 5;  // strips that fit the small budget
    ThreadGroup threads(workers);
    threads.run([&](JobGroup& group) {
      TestFeedback mine;
      const DetectResult result = runDetection(options, mine, group);
      QVERIFY(QString::fromStdString(result.backend).contains("gpu"));
    });
    const testing::Cube cpu = testing::readCube(dir.toStdString() + "/cpu.tif");
    const testing::Cube gpu = testing::readCube(dir.toStdString() + "/gpu.tif");
    QCOMPARE(gpu.bands, cpu.bands);
    for (int k = 0; k < cpu.bands; ++k) {
      const std::vector<double> a = testing::bandValues(cpu, k), b = testing::bandValues(gpu, k);
      double largest = 0, worst = 0;
      for (size_t p = 0; p < a.size(); ++p) {
        QCOMPARE(b[p] == gpu.nodata[k] || std::isnan(b[p]),
                 a[p] == cpu.nodata[k] || std::isnan(a[p]));
        if (a[p] == cpu.nodata[k] || std::isnan(a[p])) continue;
        largest = std::max(largest, std::abs(a[p]));
        worst = std::max(worst, std::abs(a[p] - b[p]));
      }
      QVERIFY2(
          worst <= 1e-9 * largest,
          qPrintable(
              QString("band %1: largest difference %2 of %3").arg(k + 1).arg(worst).arg(largest)));
      qInfo("band %d: GPU vs CPU largest difference %.3g of %.3g", k + 1, worst, largest);
    }
  }

  void constantBands() {
    testing::Cube cube = testing::correlatedCube(40, 30, 8, 19);
    testing::roundValues(cube);
    for (int64_t p = 0; p < cube.pixels(); ++p) cube.values[p * 8 + 3] = 1234;
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_UInt16);
    const Run cpu = run(optionsFor(dir + "/in.tif", dir + "/cpu.tif", "cpu"));
    const Run gpu = run(optionsFor(dir + "/in.tif", dir + "/gpu.tif", "gpu"));
    QCOMPARE(gpu.result.model.constantBands, std::vector<int>{3});
    compareRuns(cpu, gpu);
  }

  // A device budget too small for the cube: strips stream through two device slots, and the
  // passes read the file again.
  void streamingWhenTheCubeDoesNotFit() {
    testing::Cube cube = testing::correlatedCube(300, 211, 40, 23);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
    PcaOptions options = optionsFor(dir + "/in.tif", dir + "/cpu.tif", "cpu");
    options.components = 6;
    options.stripRows = 17;
    options.ramBytes = 16ll << 20;  // not resident on the host either
    const Run cpu = run(options);
    options.device = parseDevice("gpu");
    options.gpuMemoryBytes = 12ll << 20;  // the cube is 10 MB
    options.output = (dir + "/gpu.tif").toStdString();
    const Run gpu = run(options);
    QVERIFY(!gpu.result.deviceResident);
    QVERIFY(gpu.result.seconds.device.uploadBytes > 2 * 300 * 211 * 40 * 4 - 1);  // both passes
    compareRuns(cpu, gpu);
    options.gpuMemoryBytes = 0;
    options.output = (dir + "/gpu-resident.tif").toStdString();
    const Run resident = run(options);
    QVERIFY(resident.result.deviceResident);
    QCOMPARE(resident.result.seconds.device.uploadBytes, int64_t{300} * 211 * 40 * 4);
    compareRuns(cpu, resident);
  }

  // A band-interleaved file goes to the GPU as it holds its bands (band-major strips, made
  // pixel-interleaved on the device rather than on the host's cores): the same bits as from the
  // pixel-interleaved file, resident or streamed, for each kind of job, and for workers that start
  // below the first row (MNF's row above).
  void bandInterleavedInputs_data() {
    QTest::addColumn<QString>("job");
    QTest::addColumn<bool>("mnf");
    QTest::addColumn<int>("gpuMiB");
    QTest::addColumn<int>("workers");
    QTest::newRow("pca, resident") << "pca" << false << 0 << 1;
    QTest::newRow("pca, streamed") << "pca" << false << 10 << 1;
    QTest::newRow("mnf, three workers, streamed") << "pca" << true << 10 << 3;
    QTest::newRow("mnf denoise, resident") << "denoise" << true << 0 << 1;
    QTest::newRow("rx, streamed") << "rx" << false << 10 << 1;
  }
  void bandInterleavedInputs() {
    QFETCH(QString, job);
    QFETCH(bool, mnf);
    QFETCH(int, gpuMiB);
    QFETCH(int, workers);
    testing::Cube cube = testing::smoothScene(300, 200, 14, 8);
    testing::roundValues(cube);
    cube.nodata.assign(14, 0);
    for (int64_t c = 5; c < 20; ++c) cube.at(30, c, 3) = 0;
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/pixel.tif").toStdString(), GDT_UInt16);
    testing::writeCube(cube, (dir + "/band.tif").toStdString(), GDT_UInt16, "GTiff",
                       {"INTERLEAVE=BAND"});
    testing::writeCube(cube, (dir + "/band.bsq").toStdString(), GDT_UInt16, "ENVI");
    std::vector<double> first;
    for (const QString input : {"pixel.tif", "band.tif", "band.bsq"}) {
      PcaOptions options = optionsFor(dir + "/" + input, dir + "/out-" + input + ".tif", "gpu");
      options.components = job == "denoise" ? 4 : kAllComponents;
      if (mnf) options.noise = NoiseDirection::LowerRight;
      options.outputType = OutputType::Float64;
      options.stripRows = 7;  // not a divisor of the rows
      options.gpuMemoryBytes = int64_t{gpuMiB} << 20;
      CovarianceResult result;
      ThreadGroup threads(workers);
      threads.run([&](JobGroup& group) {
        TestFeedback mine;
        CovarianceResult mine_result = runNamedJob(job, options, mine, group);
        if (group.rank() == 0) result = mine_result;
      });
      QVERIFY2(QString::fromStdString(result.backend).contains("gpu"), result.backend.c_str());
      QCOMPARE(result.bandMajor, input != "pixel.tif");
      if (workers == 1) QCOMPARE(result.deviceResident, gpuMiB == 0);
      const std::vector<double> written =
          testing::samplesOf(QString::fromStdString(options.output));
      QVERIFY(!written.empty());
      if (first.empty()) {
        first = written;
        continue;
      }
      QCOMPARE(written.size(), first.size());
      QVERIFY2(std::memcmp(written.data(), first.data(), first.size() * sizeof(double)) == 0,
               qPrintable(input + " gives other samples than pixel.tif"));
    }
  }

  // Several GPUs in one process (each a band of rows, resident or streaming) against the CPU;
  // a GPU error in one of them fails the whole job with [DEVICE] and leaves nothing.
  // "gpu:0,0": two workers on GPU 0, the same path on a machine with one GPU. (MNF on several
  // workers of one GPU: see mnf(); this cube, white from pixel to pixel, has no noise-free signal
  // for MNF to find.)
  void severalGpus_data() {
    QTest::addColumn<QString>("device");
    QTest::addColumn<int>("gpuMemoryMiB");
    QTest::addColumn<int>("type");
    QTest::newRow("gpu:all, resident") << "gpu:all" << 0 << int(OutputType::Float32);
    QTest::newRow("gpu:1,0, streaming") << "gpu:1,0" << 12 << int(OutputType::Float32);
    QTest::newRow("gpu:0,1, Byte") << "gpu:0,1" << 0 << int(OutputType::Byte);
    QTest::newRow("gpu:0,0, resident") << "gpu:0,0" << 0 << int(OutputType::Float32);
    QTest::newRow("gpu:0,0, streaming, Byte") << "gpu:0,0" << 12 << int(OutputType::Byte);
  }
  void severalGpus() {
    QFETCH(QString, device);
    QFETCH(int, gpuMemoryMiB);
    QFETCH(int, type);
    const bool shared = device == "gpu:0,0";
    if (!shared && gpuRuntime(nullptr)->devices().size() < 2) QSKIP("fewer than two GPUs");
    testing::Cube cube = testing::correlatedCube(301, 211, 40, 31, 3000.0, 300.0);
    testing::roundValues(cube);
    cube.nodata.assign(40, 65535);
    for (int64_t row = 200; row < 301; ++row)  // GPU 1's rows: mostly nodata
      for (int64_t col = 0; col < 150; ++col)
        for (int b = 0; b < 40; ++b) cube.at(row, col, b) = 65535;
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_UInt16);
    PcaOptions options = optionsFor(dir + "/in.tif", dir + "/cpu.tif", "cpu");
    options.components = 8;
    options.outputType = OutputType(type);
    options.stripRows = 23;
    const Run cpu = run(options);
    options.device = shared ? DeviceChoice::sharedGpu(0, 2) : parseDevice(device.toStdString());
    options.gpuMemoryBytes = int64_t{gpuMemoryMiB} << 20;
    options.output = (dir + "/gpus.tif").toStdString();
    const Run gpus = run(options);
    QVERIFY2(
        QString::fromStdString(gpus.result.backend).contains(shared ? "2 x gpu 0" : ") + gpu "),
        gpus.result.backend.c_str());
    compareRuns(cpu, gpus);
    options.gpuMemoryBytes = 1ll << 20;  // too small for a strip: every GPU fails
    options.output = (dir + "/failed.tif").toStdString();
    QVERIFY(deviceError(options).contains("too small"));
    QVERIFY(!QFileInfo::exists(dir + "/failed.tif"));
    QCOMPARE(testing::filesIn(dir).size(), 3);  // in, cpu, gpus
  }

  // A device error in an `auto` run: the job runs again on the CPU and says so; `gpu` fails.
  void fallbackToTheCpu() {
    testing::Cube cube = testing::correlatedCube(120, 100, 30, 29);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
    PcaOptions options = optionsFor(dir + "/in.tif", dir + "/cpu.tif", "cpu");
    const Run cpu = run(options);
    options.device = DeviceChoice::anyGpu();
    options.output = (dir + "/started.tif").toStdString();
    run(options);  // CUDA now runs in this process: auto takes the GPU even for a small job
    QFile::remove(dir + "/started.tif");
    options.device = DeviceChoice();
    options.gpuMemoryBytes = 1ll << 20;  // too small for one strip
    options.output = (dir + "/auto.tif").toStdString();
    TestFeedback feedback;
    const PcaResult fallback = runPca(options, feedback);
    QVERIFY(QString::fromStdString(fallback.backend).startsWith("cpu"));
    QVERIFY2(feedback.warnings.join("\n").contains("running again on the CPU"),
             qPrintable(feedback.warnings.join("\n")));
    QCOMPARE(testing::readCube(options.output).values, cpu.written.values);

    options.device = parseDevice("gpu");
    options.output = (dir + "/gpu.tif").toStdString();
    QVERIFY(deviceError(options).contains("too small"));
    QVERIFY(!QFileInfo::exists(dir + "/gpu.tif"));
    QCOMPARE(testing::filesIn(dir).size(), 3);  // in, cpu, auto
    options.device = parseDevice("gpu:99");
    QVERIFY(deviceError(options).contains("no GPU 99"));
  }

  void jasperRidge() {
    const QString data = testing::sharedDataDir();
    if (data.isEmpty()) QSKIP("../shared/data is absent: the real-scene test needs Jasper Ridge");
    const QString dir = testing::tempDir();
    for (const QString name :
         {"jasper_ridge_100x100x198_uint16.tif", "jasper_ridge_nodata65535.tif"}) {
      // Every component, in Float64: the smallest of Jasper's 198 components are under 1e-3 of
      // the DN they are computed from, below what a float32 projection resolves to 1e-4 of their
      // std on either device.
      PcaOptions options = optionsFor(data + "/" + name, dir + "/cpu-" + name, "cpu");
      options.outputType = OutputType::Float64;
      const Run cpu = run(options);
      options.device = parseDevice("gpu");
      options.output = (dir + "/gpu-" + name).toStdString();
      const Run gpu = run(options);
      compareRuns(cpu, gpu);
      compareWithReference(data + "/" + name, gpu);
      // What a user gets by default: the components for 99 % of the variance, Float32.
      options = optionsFor(data + "/" + name, dir + "/cpu32-" + name, "cpu");
      options.components = 0;
      const Run cpu32 = run(options);
      options.device = parseDevice("gpu");
      options.output = (dir + "/gpu32-" + name).toStdString();
      compareRuns(cpu32, run(options));
    }
  }
};

QTEST_GUILESS_MAIN(GpuTests)
#include "test_gpu.moc"
