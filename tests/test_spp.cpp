// Spatial preprocessing against a float64 reference written here (plain loops over pixels and
// window offsets): alpha within 1e-6 absolute, displaced spectra within 1e-5 relative.

#include "DeviceOption.h"
#include "TestFeedback.h"
#include "TestSupport.h"
#include "core/Error.h"
#include "spp/SppJob.h"

#include <QFileInfo>
#include <QtTest>

#include <cmath>

using namespace hyperstream;

namespace {

struct SppReference {
  std::vector<double> alpha;           // per pixel, NaN where invalid
  std::vector<double> displaced;       // pixel-interleaved, NaN where invalid
  double noiseVariance = 0;            // tr N, when noise-adjusted
  int64_t angles = 0, belowNoise = 0;  // neighbour angles measured; of them, at most the noise's
};

// tr N: half the variance (two passes) of the differences between each valid pixel and its valid
// upper-left neighbour, summed over the bands.
double referenceNoiseVariance(const testing::Cube& cube, const std::vector<bool>& valid) {
  const int n = cube.bands;
  std::vector<std::vector<double>> differences(n);
  for (int64_t r = 1; r < cube.rows; ++r)
    for (int64_t c = 1; c < cube.cols; ++c) {
      const int64_t p = r * cube.cols + c, q = p - cube.cols - 1;
      if (!valid[p] || !valid[q]) continue;
      for (int b = 0; b < n; ++b)
        differences[b].push_back(cube.values[p * n + b] - cube.values[q * n + b]);
    }
  double trace = 0;
  for (const std::vector<double>& d : differences) {
    double mean = 0, squares = 0;
    for (double v : d) mean += v / static_cast<double>(d.size());
    for (double v : d) squares += (v - mean) * (v - mean);
    trace += 0.5 * squares / static_cast<double>(d.size() - 1);
  }
  return trace;
}

// The definition of the issue, spelled out as directly as possible; noise-adjusted, each angle
// less sqrt(tr N (1/|y_p|² + 1/|y_q|²)), not below 0.
SppReference referenceSpp(const testing::Cube& cube, int window, bool mirror,
                          bool noiseAdjusted = false) {
  const int64_t h = cube.rows, w = cube.cols;
  const int n = cube.bands, d = window / 2;
  std::vector<bool> valid(cube.pixels());
  std::vector<double> unit(cube.values.size()), norm2(cube.pixels());
  std::vector<double> centroid(n, 0.0);
  int64_t count = 0;
  for (int64_t p = 0; p < cube.pixels(); ++p) {
    bool ok = true;
    double norm = 0;
    for (int b = 0; b < n; ++b) {
      const double v = cube.values[p * n + b];
      ok = ok && std::isfinite(v) && !(v == cube.nodata[b]);
      norm += v * v;
    }
    norm2[p] = norm;
    norm = std::sqrt(norm);
    valid[p] = ok && norm > 0;
    if (!valid[p]) continue;
    ++count;
    for (int b = 0; b < n; ++b) {
      unit[p * n + b] = cube.values[p * n + b] / norm;
      centroid[b] += cube.values[p * n + b];
    }
  }
  for (double& v : centroid) v /= count;
  auto place = [&](int64_t j, int64_t size) -> int64_t {
    if (j >= 0 && j < size) return j;
    if (!mirror) return -1;
    const int64_t k = j < 0 ? -j : 2 * size - 2 - j;
    return k >= 0 && k < size ? k : -1;
  };
  SppReference ref;
  if (noiseAdjusted) ref.noiseVariance = referenceNoiseVariance(cube, valid);
  ref.alpha.assign(cube.pixels(), NAN);
  ref.displaced.assign(cube.values.size(), NAN);
  for (int64_t r = 0; r < h; ++r)
    for (int64_t c = 0; c < w; ++c) {
      const int64_t p = r * w + c;
      if (!valid[p]) continue;
      double betaSum = 0, sum = 0;
      for (int a = -d; a <= d; ++a)
        for (int b = -d; b <= d; ++b) {
          if (a == 0 && b == 0) continue;
          const int64_t rr = place(r + a, h), cc = place(c + b, w);
          if (rr < 0 || cc < 0 || !valid[rr * w + cc]) continue;
          double dist = 0;
          for (int k = 0; k < n; ++k) {
            const double diff = unit[p * n + k] - unit[(rr * w + cc) * n + k];
            dist += diff * diff;
          }
          const double beta = 1.0 / (a * a + b * b);
          const double noise =
              std::sqrt(ref.noiseVariance * (1 / norm2[p] + 1 / norm2[rr * w + cc]));
          const double angle = 2 * std::asin(std::sqrt(dist) / 2);
          ++ref.angles;
          ref.belowNoise += angle <= noise;
          betaSum += beta;
          sum += beta * std::max(0.0, angle - noise);
        }
      const double alpha = betaSum > 0 ? sum / betaSum : 0;
      const double rho = std::pow(1 + std::sqrt(alpha), 2);
      ref.alpha[p] = alpha;
      for (int k = 0; k < n; ++k)
        ref.displaced[p * n + k] = (cube.values[p * n + k] - centroid[k]) / rho + centroid[k];
    }
  return ref;
}

// A positive cube with nodata holes, a NaN and a zero spectrum.
testing::Cube nastyCube(int64_t rows, int64_t cols, int bands, uint64_t seed,
                        double spread = 400.0) {
  testing::Cube cube = testing::correlatedCube(rows, cols, bands, seed, 3000.0, spread);
  if (spread >= 1) testing::roundValues(cube);
  cube.nodata.assign(bands, -9999);
  if (rows * cols > 10) {
    for (int b = 0; b < bands; ++b) cube.values[5 * bands + b] = -9999;  // a nodata pixel
    cube.values[7 * bands + 1] = -9999;                                  // nodata in one band
    for (int b = 0; b < bands; ++b) cube.values[9 * bands + b] = 0;      // a zero spectrum
  }
  return cube;
}

SppOptions optionsFor(const QString& input, const QString& output) {
  SppOptions options;
  options.input = input.toStdString();
  options.output = output.toStdString();
  options.device = parseDevice("cpu");
  return options;
}

void expectError(const SppOptions& options, const char* parameter, const char* text) {
  TestFeedback feedback;
  try {
    runSpp(options, feedback);
    QFAIL("expected an error");
  } catch (const Error& e) {
    QCOMPARE(QString::fromStdString(e.parameter()), QString(parameter));
    QVERIFY2(QString(e.what()).contains(text), e.what());
  }
  QVERIFY(!QFileInfo::exists(QString::fromStdString(options.output)));
}

}  // namespace

class SppTests : public QObject {
  Q_OBJECT
 private slots:
  void againstReference_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("window");
    QTest::addColumn<bool>("mirror");
    QTest::addColumn<int>("type");
    QTest::addColumn<int>("stripRows");
    QTest::addColumn<double>("spread");
    QTest::addColumn<int>("cols");
    QTest::addColumn<bool>("noiseAdjusted");
    QTest::newRow("window 3, truncate, int16")
        << 23 << 3 << false << int(GDT_Int16) << 0 << 400.0 << 17 << false;
    QTest::newRow("window 7, truncate, float32, strips of 4")
        << 23 << 7 << false << int(GDT_Float32) << 4 << 400.0 << 17 << false;
    QTest::newRow("window 5, mirror, int16, strips of 1")
        << 23 << 5 << true << int(GDT_Int16) << 1 << 400.0 << 17 << false;
    QTest::newRow("window 15, mirror, float64")
        << 23 << 15 << true << int(GDT_Float64) << 0 << 400.0 << 17 << false;
    QTest::newRow("one row, mirror")
        << 1 << 5 << true << int(GDT_Float32) << 0 << 400.0 << 17 << false;
    // Neighbours 1e-6 rad apart: arccos of a dot product could not tell them from 0.
    QTest::newRow("tiny angles, float64")
        << 9 << 5 << false << int(GDT_Float64) << 0 << 0.002 << 17 << false;
    QTest::newRow("one row, truncate")
        << 1 << 3 << false << int(GDT_Float32) << 0 << 400.0 << 17 << false;
    // Angles up to π (spectra of both signs), over several 16-pixel vectors of a row.
    QTest::newRow("wide angles, 50 columns, window 9, mirror, strips of 3")
        << 11 << 9 << true << int(GDT_Float32) << 3 << 4000.0 << 50 << false;
    QTest::newRow("wide angles, 50 columns, window 11, truncate")
        << 14 << 11 << false << int(GDT_Int16) << 0 << 4000.0 << 50 << false;
    // Noise-adjusted: part of this cube's angles lie below the noise's and become 0.
    QTest::newRow("noise-adjusted, window 5, mirror, int16, strips of 1")
        << 23 << 5 << true << int(GDT_Int16) << 1 << 400.0 << 17 << true;
    QTest::newRow("noise-adjusted, window 7, truncate, float32, strips of 4, 50 columns")
        << 19 << 7 << false << int(GDT_Float32) << 4 << 400.0 << 50 << true;
  }
  void againstReference() {
    QFETCH(int, rows);
    QFETCH(int, window);
    QFETCH(bool, mirror);
    QFETCH(int, type);
    QFETCH(int, stripRows);
    QFETCH(double, spread);
    QFETCH(int, cols);
    QFETCH(bool, noiseAdjusted);
    const QString dir = testing::tempDir();
    testing::writeCube(nastyCube(rows, cols, 9, 3 + window, spread),
                       (dir + "/in.tif").toStdString(), GDALDataType(type));
    const testing::Cube cube = testing::readCube((dir + "/in.tif").toStdString());
    SppOptions options = optionsFor(dir + "/in.tif", dir + "/out.tif");
    options.window = window;
    options.border = mirror ? SppBorder::Mirror : SppBorder::Truncate;
    options.alphaOutput = (dir + "/alpha.tif").toStdString();
    options.rhoOutput = (dir + "/rho.tif").toStdString();
    options.outputType = OutputType::Float64;
    options.stripRows = stripRows;
    options.noiseAdjusted = noiseAdjusted;
    TestFeedback feedback;
    const SppResult result = runSpp(options, feedback);
    const SppReference ref = referenceSpp(cube, window, mirror, noiseAdjusted);
    QVERIFY(std::abs(result.noiseVariance - ref.noiseVariance) <= 1e-12 * ref.noiseVariance);
    const testing::Cube out = testing::readCube(options.output);
    const testing::Cube alpha = testing::readCube(options.alphaOutput);
    const testing::Cube rho = testing::readCube(options.rhoOutput);
    double worstAlpha = 0, worstOut = 0;
    int64_t valid = 0;
    for (int64_t p = 0; p < cube.pixels(); ++p) {
      if (std::isnan(ref.alpha[p])) {
        QVERIFY(std::isnan(alpha.values[p]) && std::isnan(rho.values[p]));
        QCOMPARE(out.values[p * cube.bands], -9999.0);  // the input's nodata
        continue;
      }
      ++valid;
      worstAlpha = std::max(worstAlpha, std::abs(alpha.values[p] - ref.alpha[p]));
      QVERIFY(std::abs(rho.values[p] - std::pow(1 + std::sqrt(ref.alpha[p]), 2)) <= 1e-6);
      for (int b = 0; b < cube.bands; ++b) {
        const double expected = ref.displaced[p * cube.bands + b];
        worstOut = std::max(
            worstOut, std::abs(out.values[p * cube.bands + b] - expected) / std::abs(expected));
      }
    }
    QCOMPARE(result.validPixels, valid);
    QVERIFY2(worstAlpha <= 1e-6, qPrintable(QString("alpha off by %1").arg(worstAlpha)));
    QVERIFY2(worstOut <= 1e-5, qPrintable(QString("output off by %1 relative").arg(worstOut)));
    double meanAlpha = 0;
    for (double a : ref.alpha)
      if (!std::isnan(a)) meanAlpha += a / valid;
    // Noise-adjusted: some of the angles lie below the noise's, and not all.
    if (noiseAdjusted)
      QVERIFY2(ref.belowNoise > ref.angles / 10 && ref.belowNoise < ref.angles * 9 / 10,
               qPrintable(QString("%1 of %2 below the noise").arg(ref.belowNoise).arg(ref.angles)));
    qInfo("alpha within %.1e (mean alpha %.1e), output within %.1e relative (%lld valid pixels)",
          worstAlpha, meanAlpha, worstOut, static_cast<long long>(valid));
  }

  // An image of fewer rows than the window has no halo rows to hold: a 1-row image at window 15
  // and a 64 MiB budget was refused ("budget too small ... 14 halo rows").
  void fewRowsUnderATightBudget() {
    for (int rows : {1, 3}) {
      const QString dir = testing::tempDir();
      testing::writeCube(nastyCube(rows, 3000, 120, 5, 50.0), (dir + "/in.tif").toStdString(),
                         GDT_Int16);
      const testing::Cube cube = testing::readCube((dir + "/in.tif").toStdString());
      SppOptions options = optionsFor(dir + "/in.tif", dir + "/out.tif");
      options.window = 15;
      options.ramBytes = 64ll << 20;
      options.alphaOutput = (dir + "/alpha.tif").toStdString();
      TestFeedback feedback;
      runSpp(options, feedback);
      const SppReference ref = referenceSpp(cube, 15, false);
      const testing::Cube alpha = testing::readCube(options.alphaOutput);
      double worst = 0;
      for (int64_t p = 0; p < cube.pixels(); ++p)
        if (!std::isnan(ref.alpha[p]))
          worst = std::max(worst, std::abs(alpha.values[p] - ref.alpha[p]));
      QVERIFY2(worst <= 1e-6, qPrintable(QString("alpha off by %1").arg(worst)));
    }
  }

  // Halos: any strip height and RAM budget gives the same bytes.
  void stripHeightsGiveTheSameResult() {
    const QString dir = testing::tempDir();
    testing::writeCube(nastyCube(61, 37, 12, 5), (dir + "/in.tif").toStdString(), GDT_UInt16);
    std::vector<double> first;
    for (int64_t rows : {0, 1, 2, 7, 60}) {
      SppOptions options = optionsFor(dir + "/in.tif", dir + QString("/out%1.tif").arg(rows));
      options.window = 7;
      options.border = SppBorder::Mirror;
      options.stripRows = rows;
      TestFeedback feedback;
      runSpp(options, feedback);
      const std::vector<double> values = testing::readCube(options.output).values;
      if (first.empty())
        first = values;
      else
        QVERIFY(values == first);
    }
  }

  // The cube kept in memory between the passes (it fits the default budget) and streamed twice
  // from the file with halos (16 MiB) give the same bytes.
  void residentAndStreamedAgree() {
    const QString dir = testing::tempDir();
    testing::writeCube(nastyCube(300, 300, 40, 11), (dir + "/in.tif").toStdString(), GDT_UInt16);
    std::vector<double> resident;
    for (int64_t ramMiB : {1024, 16}) {
      SppOptions options = optionsFor(dir + "/in.tif", dir + QString("/out%1.tif").arg(ramMiB));
      options.ramBytes = ramMiB << 20;
      TestFeedback feedback;
      const SppResult result = runSpp(options, feedback);
      QCOMPARE(result.resident, ramMiB == 1024);
      const std::vector<double> values = testing::readCube(options.output).values;
      if (resident.empty())
        resident = values;
      else
        QVERIFY(values == resident);
    }
  }

  // A streamed job's peak resident memory grows by no more than its RAM budget (plus a little for
  // GDAL's own bookkeeping), as in test_pca: a 40 MB cube under 16 MiB. Heap that earlier tests
  // freed but the allocator kept can hide part of the growth: this catches a plan that overruns
  // its budget, not a few MiB too many.
  void peakMemoryStaysWithinTheBudget() {
    const QString dir = testing::tempDir();
    testing::writeCube(nastyCube(500, 400, 100, 5), (dir + "/in.tif").toStdString(), GDT_UInt16);
    SppOptions options = optionsFor(dir + "/in.tif", dir + "/out.tif");
    options.ramBytes = 16ll << 20;
    bool resident = true;
    if (testing::underAddressSanitizer)
      QSKIP("AddressSanitizer's shadow memory and quarantine add to the resident size");
    const int64_t grown = testing::peakGrowth([&] {
      TestFeedback feedback;
      resident = runSpp(options, feedback).resident;
    });
    if (grown < 0) QSKIP("this kernel cannot reset the peak resident size (/proc/self/clear_refs)");
    QVERIFY(!resident);
    qInfo("peak grew by %.1f MiB under a budget of 16 MiB", grown / 1048576.0);
    QVERIFY(grown <= options.ramBytes + testing::kPeakSlackBytes);
  }

  void badParameters() {
    const QString dir = testing::tempDir();
    testing::writeCube(nastyCube(10, 10, 4, 1), (dir + "/in.tif").toStdString(), GDT_Int16);
    SppOptions options = optionsFor(dir + "/in.tif", dir + "/out.tif");
    options.window = 4;
    expectError(options, "WINDOW", "odd");
    options.window = 17;
    expectError(options, "WINDOW", "odd");
    options.window = 5;
    options.outputType = OutputType::Byte;
    expectError(options, "OUTPUT_TYPE", "Float32 or Float64");
    options.outputType = OutputType::Float32;
    options.device = parseDevice("gpu:99");  // no such GPU here, nor on the GPU machine
    expectError(options, "DEVICE", "GPU");
    options.device = parseDevice("gpu:all");
    expectError(options, "DEVICE", "one device");
    options.device = parseDevice("cpu");
    options.alphaOutput = options.output;
    expectError(options, "OUTPUT_ALPHA", "");
    testing::Cube empty = testing::correlatedCube(4, 4, 3, 1);
    empty.values.assign(empty.values.size(), 0.0);  // zero spectra are not valid
    testing::writeCube(empty, (dir + "/zero.tif").toStdString(), GDT_Int16);
    expectError(optionsFor(dir + "/zero.tif", dir + "/z.tif"), "INPUT", "no valid pixel");
    testing::writeCube(nastyCube(1, 30, 4, 1), (dir + "/row.tif").toStdString(), GDT_Int16);
    SppOptions oneRow = optionsFor(dir + "/row.tif", dir + "/r.tif");
    oneRow.noiseAdjusted = true;  // a single row has no diagonal pairs to estimate the noise from
    expectError(oneRow, "NOISE_ADJUSTED", "0 found");
    QCOMPARE(testing::filesIn(dir).size(), 3);  // nothing but the inputs
  }
};

QTEST_GUILESS_MAIN(SppTests)
#include "test_spp.moc"
