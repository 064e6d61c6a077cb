// Target and anomaly detection (hyperstream rx and detect) against a float64 reference written
// here: two-pass moments in long double over the valid pixels, the covariance (or correlation
// matrix) of the non-constant bands inverted explicitly by Gauss-Jordan elimination in long
// double, and each score as its formula reads. Scenes are generated with planted anomalies and
// targets at known pixels, nodata pixels and a constant band; strips and RAM budgets must give
// the same bits.

#include "DeviceOption.h"
#include "TestFeedback.h"
#include "TestSupport.h"
#include "core/Error.h"
#include "detect/ColumnDetectJob.h"
#include "detect/DetectJob.h"
#include "detect/DetectReport.h"
#include "detect/LocalRxJob.h"
#include "pca/PcaJob.h"

#include <QFile>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

using namespace hyperstream;

namespace {

constexpr double kNodata = -9999.0;
constexpr int kConstantBand = 3;

using Matrix = std::vector<long double>;  // row-major, n x n

// The inverse of a symmetric positive definite n x n matrix by Gauss-Jordan with partial pivoting.
Matrix inverse(Matrix a, int n) {
  Matrix result(static_cast<size_t>(n) * n, 0.0L);
  for (int i = 0; i < n; ++i) result[static_cast<size_t>(i) * n + i] = 1.0L;
  for (int column = 0; column < n; ++column) {
    int pivot = column;
    for (int row = column + 1; row < n; ++row)
      if (std::fabs(a[static_cast<size_t>(row) * n + column]) >
          std::fabs(a[static_cast<size_t>(pivot) * n + column]))
        pivot = row;
    for (int j = 0; j < n; ++j) {
      std::swap(a[static_cast<size_t>(column) * n + j], a[static_cast<size_t>(pivot) * n + j]);
      std::swap(result[static_cast<size_t>(column) * n + j],
                result[static_cast<size_t>(pivot) * n + j]);
    }
    const long double scale = 1.0L / a[static_cast<size_t>(column) * n + column];
    for (int j = 0; j < n; ++j) {
      a[static_cast<size_t>(column) * n + j] *= scale;
      result[static_cast<size_t>(column) * n + j] *= scale;
    }
    for (int row = 0; row < n; ++row) {
      if (row == column) continue;
      const long double factor = a[static_cast<size_t>(row) * n + column];
      for (int j = 0; j < n; ++j) {
        a[static_cast<size_t>(row) * n + j] -= factor * a[static_cast<size_t>(column) * n + j];
        result[static_cast<size_t>(row) * n + j] -=
            factor * result[static_cast<size_t>(column) * n + j];
      }
    }
  }
  return result;
}

// aᵀ M b over n values.
long double form(const std::vector<long double>& a, const Matrix& m,
                 const std::vector<long double>& b) {
  const auto n = static_cast<int>(a.size());
  long double sum = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) sum += a[i] * m[static_cast<size_t>(i) * n + j] * b[j];
  return sum;
}

// The reference detector: the valid pixels' statistics over the non-constant bands.
struct ReferenceDetector {
  std::vector<int> used;  // non-constant bands
  std::vector<long double> mean;
  Matrix inverseCovariance, inverseCorrelation;

  // C + εI with ε = shrinkage × the mean band variance + epsilon.
  ReferenceDetector(const testing::Cube& cube, double shrinkage, long double epsilon = 0) {
    const int bands = cube.bands;
    int64_t n = 0;
    std::vector<long double> sum(bands, 0.0L);
    for (int64_t p = 0; p < cube.pixels(); ++p) {
      if (!testing::referenceValid(cube, p)) continue;
      ++n;
      for (int b = 0; b < bands; ++b) sum[b] += cube.values[static_cast<size_t>(p * bands + b)];
    }
    std::vector<long double> fullMean(bands);
    for (int b = 0; b < bands; ++b) fullMean[b] = sum[b] / n;
    Matrix comoment(static_cast<size_t>(bands) * bands, 0.0L);
    for (int64_t p = 0; p < cube.pixels(); ++p) {
      if (!testing::referenceValid(cube, p)) continue;
      for (int i = 0; i < bands; ++i)
        for (int j = 0; j < bands; ++j)
          comoment[static_cast<size_t>(i) * bands + j] +=
              (cube.values[static_cast<size_t>(p * bands + i)] - fullMean[i]) *
              (cube.values[static_cast<size_t>(p * bands + j)] - fullMean[j]);
    }
    for (int b = 0; b < bands; ++b)
      if (comoment[static_cast<size_t>(b) * bands + b] > 0) used.push_back(b);
    const auto m = static_cast<int>(used.size());
    for (const int b : used) mean.push_back(fullMean[b]);
    Matrix covariance(static_cast<size_t>(m) * m), correlation(static_cast<size_t>(m) * m);
    long double trace = 0;
    for (int i = 0; i < m; ++i) trace += comoment[static_cast<size_t>(used[i]) * bands + used[i]];
    epsilon += shrinkage * trace / (n - 1) / m;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < m; ++j) {
        const long double c = comoment[static_cast<size_t>(used[i]) * bands + used[j]];
        const long double diagonal = i == j ? epsilon : 0.0L;
        covariance[static_cast<size_t>(i) * m + j] = c / (n - 1) + diagonal;
        correlation[static_cast<size_t>(i) * m + j] = c / n + diagonal + mean[i] * mean[j];
      }
    inverseCovariance = inverse(covariance, m);
    inverseCorrelation = inverse(correlation, m);
  }

  std::vector<long double> usedValues(const double* values) const {
    std::vector<long double> result;
    for (const int b : used) result.push_back(values[b]);
    return result;
  }
  std::vector<long double> centred(const double* values) const {
    std::vector<long double> result = usedValues(values);
    for (size_t i = 0; i < result.size(); ++i) result[i] -= mean[i];
    return result;
  }

  // The score of `method` for pixel values x and a target spectrum (all bands).
  double score(DetectMethod method, const double* x, const std::vector<double>& target) const {
    const std::vector<long double> d = centred(x);
    if (method == DetectMethod::Rx) return static_cast<double>(form(d, inverseCovariance, d));
    if (method == DetectMethod::Cem) {
      const std::vector<long double> t = usedValues(target.data());
      return static_cast<double>(form(t, inverseCorrelation, usedValues(x)) /
                                 form(t, inverseCorrelation, t));
    }
    const std::vector<long double> t = centred(target.data());
    const long double filtered = form(t, inverseCovariance, d);
    const long double power = form(t, inverseCovariance, t);
    if (method == DetectMethod::MatchedFilter) return static_cast<double>(filtered / power);
    return static_cast<double>(filtered * filtered / (power * form(d, inverseCovariance, d)));
  }
};

// A background of correlated Gaussian pixels (28 bands, one constant), two targets planted at
// known pixels with abundances 0.3-0.9, five anomalies (a spike in a few bands), and nodata
// pixels (one band, or all) marked by kNodata.
struct Scene {
  testing::Cube cube;
  std::vector<std::vector<double>> targets;
  std::vector<int64_t> targetPixels[2], anomalies, invalid;
};

Scene plantedScene(int64_t rows, int64_t cols, uint64_t seed) {
  Scene scene;
  scene.cube = testing::correlatedCube(rows, cols, 28, seed, 3000.0, 300.0);
  testing::Cube& cube = scene.cube;
  std::mt19937_64 random(seed + 1);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int64_t> anyPixel(0, cube.pixels() - 1);
  for (int t = 0; t < 2; ++t) {
    std::vector<double> target(cube.bands);
    for (int b = 0; b < cube.bands; ++b) target[b] = 2000.0 + 3000.0 * unit(random);
    scene.targets.push_back(target);
  }
  auto taken = [&](int64_t p) {
    for (const auto* list :
         {&scene.targetPixels[0], &scene.targetPixels[1], &scene.anomalies, &scene.invalid})
      if (std::find(list->begin(), list->end(), p) != list->end()) return true;
    return false;
  };
  auto freePixel = [&] {
    int64_t p = anyPixel(random);
    while (taken(p)) p = anyPixel(random);
    return p;
  };
  for (int t = 0; t < 2; ++t)
    for (int k = 0; k < 6; ++k) {
      const int64_t p = freePixel();
      const double abundance = 0.3 + 0.1 * k;
      for (int b = 0; b < cube.bands; ++b) {
        double& v = cube.values[static_cast<size_t>(p * cube.bands + b)];
        v = (1 - abundance) * v + abundance * scene.targets[t][b];
      }
      scene.targetPixels[t].push_back(p);
    }
  for (int k = 0; k < 5; ++k) {
    const int64_t p = freePixel();
    for (int b = 5 * k; b < 5 * k + 3; ++b)
      cube.values[static_cast<size_t>(p * cube.bands + b)] += 400.0;
    scene.anomalies.push_back(p);
  }
  for (int k = 0; k < 9; ++k) {
    const int64_t p = freePixel();
    for (int b = 0; b < cube.bands; ++b)
      if (k % 3 == 0 || b == k) cube.values[static_cast<size_t>(p * cube.bands + b)] = kNodata;
    scene.invalid.push_back(p);
  }
  for (int64_t p = 0; p < cube.pixels(); ++p)
    if (cube.values[static_cast<size_t>(p * cube.bands + kConstantBand)] != kNodata)
      cube.values[static_cast<size_t>(p * cube.bands + kConstantBand)] = 1234.0;
  cube.nodata.assign(cube.bands, kNodata);
  return scene;
}

DetectOptions detectOptions(const QString& input, const QString& output, DetectMethod method,
                            const std::vector<std::vector<double>>& targets) {
  DetectOptions options;
  options.input = input.toStdString();
  options.output = output.toStdString();
  options.device = parseDevice("cpu");
  options.outputType = OutputType::Float64;
  options.detector.method = method;
  if (method != DetectMethod::Rx)
    for (size_t t = 0; t < targets.size(); ++t)
      options.targetTable.targets.push_back({"target " + std::to_string(t + 1), targets[t]});
  return options;
}

DetectResult runQuietly(const DetectOptions& options) {
  TestFeedback feedback;
  return runDetection(options, feedback);
}

QByteArray fileBytes(const QString& path) {
  QFile file(path);
  return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

const char* methodName(DetectMethod method) {
  static const std::string names[] = {"rx", "mf", "ace", "cem"};
  return names[static_cast<int>(method)].c_str();
}

// A pushbroom scene: each column c sees the background through its own gains and offsets (a
// spectrum of its own, much larger than the noise), over correlated Gaussian pixels; nodata
// pixels; one band constant in column 3.
testing::Cube pushbroomScene(int64_t rows, int64_t cols, int bands, uint64_t seed,
                             double offsetSpread) {
  testing::Cube cube = testing::correlatedCube(rows, cols, bands, seed, 3000.0, 60.0);
  std::mt19937_64 random(seed + 7);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int64_t c = 0; c < cols; ++c) {
    std::vector<double> gain(bands), offset(bands);
    for (int b = 0; b < bands; ++b) {
      gain[b] = 1 + 0.05 * normal(random);
      offset[b] = offsetSpread * normal(random);
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int b = 0; b < bands; ++b) cube.at(r, c, b) = cube.at(r, c, b) * gain[b] + offset[b];
  }
  for (int64_t r = 0; r < rows; ++r) cube.at(r, 3, 2) = 777.0;
  for (int k = 0; k < 7; ++k) cube.at(5 + 3 * k, 2 + k, k % 3 == 0 ? 0 : 4) = kNodata;
  cube.nodata.assign(bands, kNodata);
  return cube;
}

// Column c of a cube as a cube of its own (rows x 1).
testing::Cube columnOf(const testing::Cube& cube, int64_t c) {
  testing::Cube column;
  column.rows = cube.rows;
  column.cols = 1;
  column.bands = cube.bands;
  column.nodata = cube.nodata;
  for (int64_t r = 0; r < cube.rows; ++r)
    for (int b = 0; b < cube.bands; ++b) column.values.push_back(cube.at(r, c, b));
  return column;
}

// The valid pixels' mean of each band (double).
std::vector<double> meanOf(const testing::Cube& cube) {
  std::vector<double> sum(cube.bands, 0.0);
  int64_t n = 0;
  for (int64_t p = 0; p < cube.pixels(); ++p) {
    if (!testing::referenceValid(cube, p)) continue;
    ++n;
    for (int b = 0; b < cube.bands; ++b)
      sum[b] += cube.values[static_cast<size_t>(p * cube.bands + b)];
  }
  for (double& v : sum) v /= static_cast<double>(n);
  return sum;
}

ColumnDetectResult runColumns(const ColumnDetectOptions& options) {
  TestFeedback feedback;
  return runColumnDetection(options, feedback);
}

ColumnDetectOptions columnOptions(const QString& input, const QString& output, DetectMethod method,
                                  const std::vector<std::vector<double>>& targets) {
  ColumnDetectOptions options;
  options.input = input.toStdString();
  options.output = output.toStdString();
  options.outputType = OutputType::Float64;
  options.method = method;
  for (size_t t = 0; t < targets.size(); ++t)
    options.targetTable.targets.push_back({"target " + std::to_string(t + 1), targets[t]});
  return options;
}

// A methane-like unit absorption spectrum: three narrow features (per unit of enhancement).
std::vector<double> absorptionSpectrum(int bands) {
  std::vector<double> k(bands);
  for (int b = 0; b < bands; ++b)
    for (const double centre : {0.55 * bands, 0.7 * bands, 0.85 * bands})
      k[b] += 0.02 * std::exp(-std::pow((b - centre) / 0.8, 2));
  return k;
}

// The rate of `plume` pixels scoring above the background's (1 - 1e-3) quantile.
double detectionRate(const std::vector<double>& scores, const std::vector<bool>& plume) {
  std::vector<double> background;
  for (size_t p = 0; p < scores.size(); ++p)
    if (!plume[p] && !std::isnan(scores[p])) background.push_back(scores[p]);
  std::sort(background.begin(), background.end());
  const double threshold = background[static_cast<size_t>(0.999 * background.size())];
  int64_t found = 0, total = 0;
  for (size_t p = 0; p < scores.size(); ++p)
    if (plume[p]) {
      ++total;
      found += scores[p] > threshold ? 1 : 0;
    }
  return static_cast<double>(found) / static_cast<double>(total);
}

// Local RX's reference: each valid pixel's first k components (the reference PCA's eigenvectors,
// projected in long double), its background (the window less the guard square, valid pixels
// inside the image) by two passes in long double, its covariance + εI (ε = shrinkage × its mean
// variance + noise) inverted by Gauss-Jordan. NaN where the background has fewer than two pixels.
std::vector<double> referenceLocalRx(const testing::Cube& cube, int k, int window, int guard,
                                     double shrinkage, double noise) {
  const testing::Reference pca = testing::referencePca(cube);
  const int64_t pixels = cube.pixels();
  std::vector<std::vector<long double>> y(static_cast<size_t>(pixels));
  for (int64_t p = 0; p < pixels; ++p) {
    if (!testing::referenceValid(cube, p)) continue;
    for (int i = 0; i < k; ++i) {
      long double along = 0;
      for (int b = 0; b < cube.bands; ++b)
        along += (static_cast<long double>(cube.values[static_cast<size_t>(p * cube.bands + b)]) -
                  pca.mean[b]) *
                 pca.vectors[i][b];
      y[p].push_back(along);
    }
  }
  const int64_t h = window / 2, g = guard / 2;
  std::vector<double> scores(static_cast<size_t>(pixels), std::nan(""));
  for (int64_t p = 0; p < pixels; ++p) {
    if (y[p].empty()) continue;
    const int64_t row = p / cube.cols, column = p % cube.cols;
    std::vector<int64_t> background;
    for (int64_t r = std::max<int64_t>(0, row - h); r <= std::min(cube.rows - 1, row + h); ++r)
      for (int64_t c = std::max<int64_t>(0, column - h); c <= std::min(cube.cols - 1, column + h);
           ++c)
        if ((std::abs(r - row) > g || std::abs(c - column) > g) && !y[r * cube.cols + c].empty())
          background.push_back(r * cube.cols + c);
    const auto n = static_cast<int64_t>(background.size());
    // Fewer than two pixels, or (no ε) no more than components: singular.
    if (n < 2 || (n <= k && shrinkage == 0 && noise == 0)) continue;
    std::vector<long double> mean(k, 0.0L);
    for (const int64_t q : background)
      for (int i = 0; i < k; ++i) mean[i] += y[q][i];
    for (long double& m : mean) m /= n;
    Matrix covariance(static_cast<size_t>(k) * k, 0.0L);
    for (const int64_t q : background)
      for (int i = 0; i < k; ++i)
        for (int j = 0; j < k; ++j)
          covariance[static_cast<size_t>(i) * k + j] += (y[q][i] - mean[i]) * (y[q][j] - mean[j]);
    long double trace = 0;
    for (long double& c : covariance) c /= (n - 1);
    for (int i = 0; i < k; ++i) trace += covariance[static_cast<size_t>(i) * k + i];
    for (int i = 0; i < k; ++i)
      covariance[static_cast<size_t>(i) * k + i] += shrinkage * trace / k + noise;
    std::vector<long double> d(k);
    for (int i = 0; i < k; ++i) d[i] = y[p][i] - mean[i];
    scores[p] = static_cast<double>(form(d, inverse(covariance, k), d));
  }
  return scores;
}

// Local RX's default ε: HySime's noise of each non-constant band (regressed on the others),
// carried into the reference PCA's first k components and averaged over them.
double referenceComponentNoise(const testing::Cube& cube, int k) {
  const testing::Reference pca = testing::referencePca(cube);
  std::vector<int> used;
  for (int b = 0; b < cube.bands; ++b)
    if (std::find(pca.constant.begin(), pca.constant.end(), b) == pca.constant.end())
      used.push_back(b);
  const std::vector<double> noise = testing::referenceRegressionNoise(cube, used);
  long double sum = 0;
  for (int i = 0; i < k; ++i)
    for (size_t u = 0; u < used.size(); ++u)
      sum += static_cast<long double>(pca.vectors[i][used[u]]) * pca.vectors[i][used[u]] * noise[u];
  return static_cast<double>(sum / k);
}

LocalRxOptions localOptions(const QString& input, const QString& output, int components, int window,
                            int guard) {
  LocalRxOptions options;
  options.input = input.toStdString();
  options.output = output.toStdString();
  options.device = parseDevice("cpu");
  options.outputType = OutputType::Float64;
  options.components = components;
  options.window = window;
  options.guard = guard;
  return options;
}

LocalRxResult runLocal(const LocalRxOptions& options) {
  TestFeedback feedback;
  return runLocalRx(options, feedback);
}

// Where `pixels` rank among the valid scores (0: the largest), sorted.
std::vector<int64_t> ranksOf(const std::vector<double>& scores,
                             const std::vector<int64_t>& pixels) {
  std::vector<int64_t> ranks;
  for (const int64_t p : pixels) {
    int64_t above = 0;
    for (const double score : scores) above += score > scores[p] ? 1 : 0;
    ranks.push_back(above);
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}
}  // namespace

class TestDetect : public QObject {
  Q_OBJECT

 private slots:
  void scoresMatchReference_data();
  void scoresMatchReference();
  void plantedPixelsStandOut();
  void componentsAndShrinkage();
  void stripsAndBudgetsGiveTheSameBits();
  void manyBands();
  void realSceneMatchesReference();
  void targetsByBandName();
  void clearErrors();
  void perColumnMatchesReference_data();
  void perColumnMatchesReference();
  void perColumnFindsThePlume();
  void localRxMatchesReference_data();
  void localRxMatchesReference();
  void localRxFindsWhatTheImageHides();
  void localRxErrors();
  void localRxLeavesSingularBackgrounds();
  void reports();
};

void TestDetect::scoresMatchReference_data() {
  QTest::addColumn<int>("method");
  QTest::addColumn<int>("type");
  for (const DetectMethod method :
       {DetectMethod::Rx, DetectMethod::MatchedFilter, DetectMethod::Ace, DetectMethod::Cem})
    for (const GDALDataType type : {GDT_Float64, GDT_Int16}) {
      const std::string name = std::string(methodName(method)) + " " + GDALGetDataTypeName(type);
      QTest::newRow(name.c_str()) << static_cast<int>(method) << static_cast<int>(type);
    }
}

// Every valid pixel's scores within 1e-9 of the reference's largest score of that band (scores
// near 0 have no relative precision in either); nodata where a band is nodata.
void TestDetect::scoresMatchReference() {
  QFETCH(int, method);
  QFETCH(int, type);
  const auto detect = static_cast<DetectMethod>(method);
  Scene scene = plantedScene(61, 47, 11 + method);
  if (type == GDT_Int16) testing::roundValues(scene.cube);  // within Int16, nodata kept
  const QString dir = testing::tempDir();
  testing::writeCube(scene.cube, (dir + "/in.tif").toStdString(), static_cast<GDALDataType>(type));
  const DetectResult result =
      runQuietly(detectOptions(dir + "/in.tif", dir + "/scores.tif", detect, scene.targets));
  QCOMPARE(result.detector.components, scene.cube.bands - 1);  // the constant band left out
  const testing::Cube written = testing::readCube((dir + "/scores.tif").toStdString());
  const int outputs = detect == DetectMethod::Rx ? 1 : 2;
  QCOMPARE(written.bands, outputs);
  const ReferenceDetector reference(scene.cube, 0.0);
  for (int k = 0; k < outputs; ++k) {
    std::vector<double> expected(static_cast<size_t>(scene.cube.pixels()), std::nan(""));
    double largest = 0;
    for (int64_t p = 0; p < scene.cube.pixels(); ++p) {
      if (!testing::referenceValid(scene.cube, p)) continue;
      expected[p] =
          reference.score(detect, &scene.cube.values[static_cast<size_t>(p * scene.cube.bands)],
                          detect == DetectMethod::Rx ? std::vector<double>() : scene.targets[k]);
      largest = std::max(largest, std::fabs(expected[p]));
    }
    double worst = 0;
    for (int64_t p = 0; p < scene.cube.pixels(); ++p) {
      const double got = written.at(p / scene.cube.cols, p % scene.cube.cols, k);
      if (std::isnan(expected[p])) {
        QCOMPARE(got, kNodata);
        continue;
      }
      worst = std::max(worst, std::fabs(got - expected[p]) / largest);
    }
    qInfo("%s band %d: largest difference %.3g of the largest score %.6g", methodName(detect),
          k + 1, worst, largest);
    QVERIFY2(worst <= 1e-9, qPrintable(QString("%1 relative to the largest score").arg(worst)));
  }
}

// The anomalies have the largest RX scores; each target's planted pixels have the largest MF
// and ACE scores of their band, MF about their abundance.
void TestDetect::plantedPixelsStandOut() {
  const Scene scene = plantedScene(80, 70, 5);
  const QString dir = testing::tempDir();
  testing::writeCube(scene.cube, (dir + "/in.tif").toStdString(), GDT_Float32);
  auto topPixels = [&](const QString& path, int band, size_t count) {
    const testing::Cube written = testing::readCube(path.toStdString());
    std::vector<int64_t> order(static_cast<size_t>(written.pixels()));
    std::iota(order.begin(), order.end(), 0);
    auto value = [&](int64_t p) {
      const double v = written.at(p / written.cols, p % written.cols, band);
      return v == kNodata ? -1e300 : v;
    };
    std::partial_sort(order.begin(), order.begin() + static_cast<int64_t>(count), order.end(),
                      [&](int64_t a, int64_t b) { return value(a) > value(b); });
    order.resize(count);
    std::sort(order.begin(), order.end());
    return order;
  };
  runQuietly(detectOptions(dir + "/in.tif", dir + "/rx.tif", DetectMethod::Rx, {}));
  std::vector<int64_t> anomalies = scene.anomalies;
  std::sort(anomalies.begin(), anomalies.end());
  // The targets' pixels are anomalies too: the five spikes are among the 17 largest.
  const std::vector<int64_t> top = topPixels(dir + "/rx.tif", 0, 17);
  for (const int64_t p : anomalies) QVERIFY(std::binary_search(top.begin(), top.end(), p));
  for (const DetectMethod method : {DetectMethod::MatchedFilter, DetectMethod::Ace}) {
    const QString path = dir + "/" + methodName(method) + ".tif";
    runQuietly(detectOptions(dir + "/in.tif", path, method, scene.targets));
    for (int t = 0; t < 2; ++t) {
      std::vector<int64_t> planted = scene.targetPixels[t];
      std::sort(planted.begin(), planted.end());
      QCOMPARE(topPixels(path, t, planted.size()), planted);
    }
  }
  const testing::Cube mf = testing::readCube((dir + "/mf.tif").toStdString());
  for (int t = 0; t < 2; ++t)
    for (int k = 0; k < 6; ++k) {
      const int64_t p = scene.targetPixels[t][k];
      QVERIFY(std::fabs(mf.at(p / mf.cols, p % mf.cols, t) - (0.3 + 0.1 * k)) < 0.05);
    }
}

// --components K: RX in the first K principal components (the reference's eigenvectors by
// Jacobi), auto in as many as HySime estimates; the shrinkage: the reference's C + εI.
void TestDetect::componentsAndShrinkage() {
  const Scene scene = plantedScene(40, 40, 23);
  const QString dir = testing::tempDir();
  testing::writeCube(scene.cube, (dir + "/in.tif").toStdString(), GDT_Float64);
  DetectOptions options = detectOptions(dir + "/in.tif", dir + "/rx5.tif", DetectMethod::Rx, {});
  options.detector.components = 5;
  runQuietly(options);
  const testing::Reference pca = testing::referencePca(scene.cube);
  const testing::Cube rx5 = testing::readCube((dir + "/rx5.tif").toStdString());
  double worst = 0, largest = 0;
  std::vector<double> expected(static_cast<size_t>(scene.cube.pixels()), std::nan(""));
  for (int64_t p = 0; p < scene.cube.pixels(); ++p) {
    if (!testing::referenceValid(scene.cube, p)) continue;
    double sum = 0;
    for (int k = 0; k < 5; ++k) {
      double along = 0;
      for (int b = 0; b < scene.cube.bands; ++b)
        along += (scene.cube.values[static_cast<size_t>(p * scene.cube.bands + b)] - pca.mean[b]) *
                 pca.vectors[k][b];
      sum += along * along / pca.eigenvalues[k];
    }
    expected[p] = sum;
    largest = std::max(largest, sum);
  }
  for (int64_t p = 0; p < scene.cube.pixels(); ++p)
    if (!std::isnan(expected[p]))
      worst =
          std::max(worst, std::fabs(rx5.at(p / rx5.cols, p % rx5.cols, 0) - expected[p]) / largest);
  QVERIFY2(worst < 1e-9, qPrintable(QString::number(worst)));

  // auto: as many components as HySime's estimate, the same scores as that count given.
  options.output = (dir + "/auto.tif").toStdString();
  options.detector.components = kSignalSubspace;
  const DetectResult automatic = runQuietly(options);
  QVERIFY(automatic.subspace);
  QCOMPARE(automatic.detector.components, automatic.subspace->dimension);
  options.output = (dir + "/counted.tif").toStdString();
  options.detector.components = automatic.subspace->dimension;
  runQuietly(options);
  QCOMPARE(testing::samplesOf(dir + "/auto.tif"), testing::samplesOf(dir + "/counted.tif"));

  for (const DetectMethod method : {DetectMethod::Rx, DetectMethod::Cem}) {
    options = detectOptions(dir + "/in.tif", dir + "/shrunk.tif", method, scene.targets);
    options.detector.shrinkage = 0.01;
    QFile::remove(dir + "/shrunk.tif");
    const DetectResult result = runQuietly(options);
    QVERIFY(result.detector.epsilon > 0);
    const ReferenceDetector reference(scene.cube, 0.01);
    const testing::Cube shrunk = testing::readCube((dir + "/shrunk.tif").toStdString());
    worst = 0;
    largest = 0;
    std::vector<double> scores(static_cast<size_t>(scene.cube.pixels()), std::nan(""));
    for (int64_t p = 0; p < scene.cube.pixels(); ++p) {
      if (!testing::referenceValid(scene.cube, p)) continue;
      scores[p] = reference.score(
          method, &scene.cube.values[static_cast<size_t>(p * scene.cube.bands)], scene.targets[0]);
      largest = std::max(largest, std::fabs(scores[p]));
    }
    for (int64_t p = 0; p < scene.cube.pixels(); ++p)
      if (!std::isnan(scores[p]))
        worst = std::max(
            worst, std::fabs(shrunk.at(p / shrunk.cols, p % shrunk.cols, 0) - scores[p]) / largest);
    QVERIFY2(worst < 1e-9, qPrintable(QString("%1 %2").arg(methodName(method)).arg(worst)));
  }
}

// Strips of 1, 7 and all rows and a RAM budget of 16 MiB give files of the same bytes.
void TestDetect::stripsAndBudgetsGiveTheSameBits() {
  const Scene scene = plantedScene(53, 37, 31);
  const QString dir = testing::tempDir();
  testing::writeCube(scene.cube, (dir + "/in.tif").toStdString(), GDT_UInt16);
  for (const DetectMethod method : {DetectMethod::Rx, DetectMethod::Ace, DetectMethod::Cem}) {
    QByteArray first;
    for (const int strip : {0, 1, 7, 53}) {
      const QString output = dir + QString("/%1_%2.tif").arg(methodName(method)).arg(strip);
      DetectOptions options = detectOptions(dir + "/in.tif", output, method, scene.targets);
      options.stripRows = strip;
      if (strip == 7) options.ramBytes = 16ll << 20;
      runQuietly(options);
      const std::vector<double> values = testing::samplesOf(output);
      const QByteArray bytes(reinterpret_cast<const char*>(values.data()),
                             static_cast<int>(values.size() * sizeof(double)));
      if (strip == 0)
        first = bytes;
      else
        QVERIFY2(bytes == first,
                 qPrintable(QString("%1, strips of %2 rows").arg(methodName(method)).arg(strip)));
    }
  }
}

// 60 bands (four blocks of components in the CPU's projection): RX and ACE against the
// reference, and the same bits from strips of 1, 7 and all rows, pixel- and band-interleaved
// files.
void TestDetect::manyBands() {
  testing::Cube cube = testing::correlatedCube(41, 29, 60, 51, 3000.0, 300.0);
  testing::roundValues(cube);
  cube.nodata.assign(60, 0.0);
  for (int b = 0; b < 60; ++b) cube.at(7, 11, b) = 0.0;
  const std::vector<std::vector<double>> targets = {std::vector<double>(
      cube.values.begin() + int64_t{600} * 60, cube.values.begin() + int64_t{601} * 60)};
  const QString dir = testing::tempDir();
  testing::writeCube(cube, (dir + "/pixel.tif").toStdString(), GDT_UInt16);
  testing::writeCube(cube, (dir + "/band.tif").toStdString(), GDT_UInt16, "GTiff",
                     {"INTERLEAVE=BAND"});
  const ReferenceDetector reference(cube, 0.0);
  for (const DetectMethod method : {DetectMethod::Rx, DetectMethod::Ace}) {
    std::vector<double> first;
    for (const QString& file : {QString("pixel"), QString("band")})
      for (const int strip : {0, 1, 7}) {
        const QString output =
            dir + QString("/%1_%2_%3.tif").arg(methodName(method), file).arg(strip);
        DetectOptions options = detectOptions(dir + "/" + file + ".tif", output, method, targets);
        options.stripRows = strip;
        runQuietly(options);
        const std::vector<double> values = testing::samplesOf(output);
        if (first.empty()) {
          first = values;
          double worst = 0, largest = 0;
          for (int64_t p = 0; p < cube.pixels(); ++p) {
            if (!testing::referenceValid(cube, p)) continue;
            const double expected =
                reference.score(method, &cube.values[static_cast<size_t>(p * 60)], targets[0]);
            largest = std::max(largest, std::fabs(expected));
            worst = std::max(worst, std::fabs(values[p] - expected));
          }
          QVERIFY2(
              worst <= 1e-9 * largest,
              qPrintable(QString("%1: %2 of %3").arg(methodName(method)).arg(worst).arg(largest)));
        } else {
          QVERIFY2(values == first, qPrintable(output));
        }
      }
  }
}

// Jasper Ridge (AVIRIS, uint16 DN): RX against the reference, within 1e-9 of the largest score.
void TestDetect::realSceneMatchesReference() {
  const QString data = testing::sharedDataDir();
  if (data.isEmpty()) QSKIP("../shared/data is absent");
  const QString input = data + "/jasper_ridge_100x100x198_uint16.tif";
  const testing::Cube cube = testing::readCube(input.toStdString());
  const QString dir = testing::tempDir();
  runQuietly(detectOptions(input, dir + "/rx.tif", DetectMethod::Rx, {}));
  const testing::Cube written = testing::readCube((dir + "/rx.tif").toStdString());
  const ReferenceDetector reference(cube, 0.0);
  double worst = 0, largest = 0;
  std::vector<double> expected(static_cast<size_t>(cube.pixels()));
  for (int64_t p = 0; p < cube.pixels(); ++p) {
    expected[p] =
        reference.score(DetectMethod::Rx, &cube.values[static_cast<size_t>(p * cube.bands)], {});
    largest = std::max(largest, expected[p]);
  }
  for (int64_t p = 0; p < cube.pixels(); ++p)
    worst = std::max(
        worst, std::fabs(written.at(p / cube.cols, p % cube.cols, 0) - expected[p]) / largest);
  qInfo("Jasper Ridge RX: largest difference %.3g of the largest score %.6g", worst, largest);
  QVERIFY2(worst < 1e-9, qPrintable(QString::number(worst)));
}

// A table whose columns name the image's bands (as the endmembers' table does) is read by name:
// its columns in another order give the same scores; a column that names no band is refused.
void TestDetect::targetsByBandName() {
  const Scene scene = plantedScene(30, 30, 41);
  const QString dir = testing::tempDir();
  testing::writeCube(scene.cube, (dir + "/in.tif").toStdString(), GDT_Float32);
  DetectOptions options = detectOptions(dir + "/in.tif", dir + "/plain.tif",
                                        DetectMethod::MatchedFilter, scene.targets);
  runQuietly(options);
  DetectOptions named =
      detectOptions(dir + "/in.tif", dir + "/named.tif", DetectMethod::MatchedFilter, {});
  for (int b = scene.cube.bands - 1; b >= 0; --b)
    named.targetTable.columns.push_back("band " + std::to_string(b + 1));
  for (size_t t = 0; t < scene.targets.size(); ++t) {
    std::vector<double> reversed(scene.targets[t].rbegin(), scene.targets[t].rend());
    named.targetTable.targets.push_back({"target " + std::to_string(t + 1), reversed});
  }
  runQuietly(named);
  QCOMPARE(testing::samplesOf(dir + "/named.tif"), testing::samplesOf(dir + "/plain.tif"));
  // A column that names no band of the image is refused, not ignored.
  named.targetTable.columns.push_back("extra");
  for (Target& target : named.targetTable.targets) target.spectrum.push_back(1e9);
  named.output = (dir + "/extra.tif").toStdString();
  try {
    runQuietly(named);
    QFAIL("a column of no band was taken");
  } catch (const Error& error) {
    QCOMPARE(error.parameter(), std::string("TARGETS"));
    QVERIFY2(QString(error.what()).contains("'extra' names no band"), error.what());
  }
}

void TestDetect::clearErrors() {
  const Scene scene = plantedScene(20, 20, 43);
  const QString dir = testing::tempDir();
  testing::writeCube(scene.cube, (dir + "/in.tif").toStdString(), GDT_Float32);
  auto parameterOf = [&](const DetectOptions& options) -> std::string {
    try {
      runQuietly(options);
    } catch (const Error& error) {
      return error.parameter();
    }
    return "none";
  };
  std::vector<std::vector<double>> shortTargets = scene.targets;
  shortTargets[1].pop_back();
  QCOMPARE(
      parameterOf(detectOptions(dir + "/in.tif", dir + "/a.tif", DetectMethod::Ace, shortTargets)),
      std::string("TARGETS"));
  DetectOptions noTargets =
      detectOptions(dir + "/in.tif", dir + "/a.tif", DetectMethod::MatchedFilter, {});
  QCOMPARE(parameterOf(noTargets), std::string("TARGETS"));
  // A target that is the image's mean within rounding (1e-12 relative): its scores would be the
  // noise times 1e12; refused by MF and ACE, taken by CEM (which takes no mean out). One 1e-3 of
  // a standard deviation away is a target.
  const testing::Cube written = testing::readCube((dir + "/in.tif").toStdString());
  std::vector<double> mean(written.bands, 0.0);
  int64_t valid = 0;
  for (int64_t p = 0; p < written.pixels(); ++p) {
    if (!testing::referenceValid(written, p)) continue;
    ++valid;
    for (int b = 0; b < written.bands; ++b) mean[b] += written.values[p * written.bands + b];
  }
  for (double& m : mean) m = m / static_cast<double>(valid) * (1 + 1e-12);
  for (const DetectMethod method : {DetectMethod::MatchedFilter, DetectMethod::Ace})
    QCOMPARE(parameterOf(detectOptions(dir + "/in.tif", dir + "/a.tif", method, {mean})),
             std::string("TARGETS"));
  QCOMPARE(parameterOf(detectOptions(dir + "/in.tif", dir + "/a.tif", DetectMethod::Cem, {mean})),
           std::string("none"));
  std::vector<double> near = mean;
  const testing::Reference pca = testing::referencePca(written);
  const std::vector<double>& spread = pca.vectors[0];
  const double deviation = std::sqrt(pca.eigenvalues[0]);
  for (int b = 0; b < written.bands; ++b) near[b] += 1e-3 * deviation * spread[b];
  QCOMPARE(parameterOf(
               detectOptions(dir + "/in.tif", dir + "/a.tif", DetectMethod::MatchedFilter, {near})),
           std::string("none"));
  DetectOptions byte = detectOptions(dir + "/in.tif", dir + "/a.tif", DetectMethod::Rx, {});
  byte.outputType = OutputType::Byte;
  QCOMPARE(parameterOf(byte), std::string("OUTPUT_TYPE"));
  // 12 valid pixels of 28 bands: a singular covariance, refused unless shrunk.
  testing::Cube few = testing::correlatedCube(3, 4, 28, 3);
  testing::writeCube(few, (dir + "/few.tif").toStdString(), GDT_Float32);
  DetectOptions singular = detectOptions(dir + "/few.tif", dir + "/a.tif", DetectMethod::Rx, {});
  QCOMPARE(parameterOf(singular), std::string("SHRINKAGE"));
  singular.detector.shrinkage = 1e-3;
  QCOMPARE(parameterOf(singular), std::string("none"));
  // Per column: CEM, a GPU, a budget the columns' statistics do not fit; absorption for CEM.
  auto columnParameter = [&](const ColumnDetectOptions& options) -> std::string {
    try {
      runColumns(options);
    } catch (const Error& error) {
      return error.parameter();
    }
    return "none";
  };
  ColumnDetectOptions cem =
      columnOptions(dir + "/in.tif", dir + "/a.tif", DetectMethod::Cem, scene.targets);
  QCOMPARE(columnParameter(cem), std::string("METHOD"));
  ColumnDetectOptions onGpu = columnOptions(dir + "/in.tif", dir + "/a.tif", DetectMethod::Rx, {});
  onGpu.device = DeviceChoice::gpu(0);
  QCOMPARE(columnParameter(onGpu), std::string("DEVICE"));
  ColumnDetectOptions small = columnOptions(dir + "/in.tif", dir + "/a.tif", DetectMethod::Rx, {});
  small.ramBytes = 16ll << 20;
  QCOMPARE(columnParameter(small), std::string("RAM_MB"));
  // Columns of 3 pixels for 28 bands: regular with each column's noise (the default), refused
  // without a shrinkage.
  ColumnDetectOptions fewRows =
      columnOptions(dir + "/few.tif", dir + "/b.tif", DetectMethod::Rx, {});
  QCOMPARE(columnParameter(fewRows), std::string("none"));
  fewRows.shrinkage = 0.0;
  QCOMPARE(columnParameter(fewRows), std::string("SHRINKAGE"));
  // Per column the same criterion against each column's mean: every column here is column 0,
  // and the target its mean within rounding.
  testing::Cube sameColumns = written;
  for (int64_t r = 0; r < written.rows; ++r)
    for (int64_t c = 1; c < written.cols; ++c)
      for (int b = 0; b < written.bands; ++b) sameColumns.at(r, c, b) = written.at(r, 0, b);
  testing::writeCube(sameColumns, (dir + "/same.tif").toStdString(), GDT_Float64);
  std::vector<double> columnMean(written.bands, 0.0);
  int64_t columnValid = 0;
  for (int64_t r = 0; r < written.rows; ++r) {
    if (!testing::referenceValid(written, r * written.cols)) continue;
    ++columnValid;
    for (int b = 0; b < written.bands; ++b) columnMean[b] += written.at(r, 0, b);
  }
  for (double& m : columnMean) m = m / static_cast<double>(columnValid) * (1 + 1e-12);
  for (const DetectMethod method : {DetectMethod::MatchedFilter, DetectMethod::Ace})
    QCOMPARE(
        columnParameter(columnOptions(dir + "/same.tif", dir + "/b.tif", method, {columnMean})),
        std::string("TARGETS"));
  QVERIFY(QFile::remove(dir + "/same.tif"));
  DetectOptions absorbedCem =
      detectOptions(dir + "/in.tif", dir + "/a.tif", DetectMethod::Cem, scene.targets);
  absorbedCem.detector.absorption = true;
  QCOMPARE(parameterOf(absorbedCem), std::string("TARGET_MODE"));
  QVERIFY(!QFile::exists(dir + "/a.tif.tmp"));
  const QStringList left = testing::filesIn(dir);
  QVERIFY2(left.size() == 4, qPrintable(left.join(", ")));  // in, few, a and b .tif
}

void TestDetect::perColumnMatchesReference_data() {
  QTest::addColumn<int>("method");
  QTest::addColumn<bool>("absorption");
  QTest::addColumn<double>("shrinkage");
  QTest::newRow("rx") << static_cast<int>(DetectMethod::Rx) << false << 0.0;
  QTest::newRow("mf") << static_cast<int>(DetectMethod::MatchedFilter) << false << 0.0;
  QTest::newRow("ace") << static_cast<int>(DetectMethod::Ace) << false << 0.0;
  QTest::newRow("mf, absorption, shrinkage 1e-3")
      << static_cast<int>(DetectMethod::MatchedFilter) << true << 1e-3;
  QTest::newRow("ace, absorption") << static_cast<int>(DetectMethod::Ace) << true << 0.0;
  // -1: no shrinkage given, each column's noise variance.
  QTest::newRow("rx, the noise") << static_cast<int>(DetectMethod::Rx) << false << -1.0;
  QTest::newRow("mf, absorption, the noise")
      << static_cast<int>(DetectMethod::MatchedFilter) << true << -1.0;
}

// A column's noise variance (a cube of one column): half the mean squared difference of its
// vertically adjacent valid pixels, over its non-constant bands.
long double referenceNoise(const testing::Cube& column) {
  const int bands = column.bands;
  std::vector<long double> low(bands, INFINITY), high(bands, -INFINITY), squares(bands, 0.0L);
  int64_t pairs = 0;
  for (int64_t r = 0; r < column.rows; ++r) {
    if (!testing::referenceValid(column, r)) continue;
    const bool paired = r > 0 && testing::referenceValid(column, r - 1);
    for (int b = 0; b < bands; ++b) {
      const long double v = column.values[static_cast<size_t>(r * bands + b)];
      low[b] = std::min(low[b], v);
      high[b] = std::max(high[b], v);
      if (paired) {
        const long double d = v - column.values[static_cast<size_t>((r - 1) * bands + b)];
        squares[b] += d * d;
      }
    }
    pairs += paired ? 1 : 0;
  }
  long double total = 0;
  int varying = 0;
  for (int b = 0; b < bands; ++b)
    if (low[b] < high[b]) {
      total += squares[b] / (2.0L * pairs);
      ++varying;
    }
  return total / varying;
}

// Each column's scores against a reference fitted to that column alone (long-double moments,
// Gauss-Jordan inverse, constant bands left out): within 1e-9 of the largest score; strips of
// 1, 7 and all rows give the same bits.
void TestDetect::perColumnMatchesReference() {
  QFETCH(int, method);
  QFETCH(bool, absorption);
  QFETCH(double, shrinkage);
  const testing::Cube cube = pushbroomScene(57, 19, 14, 61, 400.0);
  const QString dir = testing::tempDir();
  testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float64);
  std::vector<std::vector<double>> targets;
  if (DetectMethod(method) != DetectMethod::Rx) {
    if (absorption) {
      targets.push_back(absorptionSpectrum(14));
    } else {
      targets.emplace_back(cube.values.begin() + int64_t{300} * 14,
                           cube.values.begin() + int64_t{301} * 14);
      targets.emplace_back(cube.values.begin() + int64_t{800} * 14,
                           cube.values.begin() + int64_t{801} * 14);
    }
  }
  ColumnDetectOptions options =
      columnOptions(dir + "/in.tif", dir + "/out.tif", DetectMethod(method), targets);
  options.absorption = absorption;
  if (shrinkage >= 0) options.shrinkage = shrinkage;
  const ColumnDetectResult result = runColumns(options);
  QCOMPARE(result.columnsUnscored, int64_t{0});
  const testing::Cube written = testing::readCube(options.output);
  double worst = 0, largest = 0;
  for (int64_t c = 0; c < cube.cols; ++c) {
    const testing::Cube column = columnOf(cube, c);
    const ReferenceDetector reference = shrinkage >= 0
                                            ? ReferenceDetector(column, shrinkage)
                                            : ReferenceDetector(column, 0, referenceNoise(column));
    const std::vector<double> mean = meanOf(column);
    for (int64_t r = 0; r < cube.rows; ++r) {
      const double* x = &column.values[static_cast<size_t>(r * 14)];
      for (int t = 0; t < written.bands; ++t) {
        const double value = written.at(r, c, t);
        if (!testing::referenceValid(column, r)) {
          QVERIFY(std::isnan(value) || value == written.nodata[t]);
          continue;
        }
        std::vector<double> target = targets.empty() ? std::vector<double>() : targets[t];
        if (absorption)  // target = m (1 - k): target - m = -m k
          for (int b = 0; b < 14; ++b) target[b] = mean[b] * (1 - targets[t][b]);
        const double expected = reference.score(DetectMethod(method), x, target);
        largest = std::max(largest, std::fabs(expected));
        worst = std::max(worst, std::fabs(value - expected));
      }
    }
  }
  qInfo("per column: largest difference %.3g of the largest score %.6g", worst / largest, largest);
  QVERIFY2(worst <= 1e-9 * largest, qPrintable(QString("%1 of %2").arg(worst).arg(largest)));
  const std::vector<double> first = testing::samplesOf(dir + "/out.tif");
  for (const int strip : {1, 7, 57}) {
    options.output = (dir + QString("/strip%1.tif").arg(strip)).toStdString();
    options.stripRows = strip;
    runColumns(options);
    const std::vector<double> again = testing::samplesOf(QString::fromStdString(options.output));
    QVERIFY(again.size() == first.size() &&
            std::memcmp(again.data(), first.data(), first.size() * sizeof(double)) == 0);
  }
}

// A planted methane-like plume in a pushbroom scene whose columns differ by far more than the
// noise: the matched filter of the unit absorption, with each column's statistics, finds it at a
// false-alarm rate of 1e-3; the image-wide statistics bury it under the columns' differences.
void TestDetect::perColumnFindsThePlume() {
  const int bands = 40;
  testing::Cube cube = pushbroomScene(400, 64, bands, 71, 300.0);
  const std::vector<double> k = absorptionSpectrum(bands);
  std::vector<bool> plume(static_cast<size_t>(cube.pixels()), false);
  int64_t plumePixels = 0;
  for (int64_t r = 0; r < cube.rows; ++r)
    for (int64_t c = 0; c < cube.cols; ++c) {
      const double u = (r - 200.0) / 40.0, v = (c - 30.0) / 9.0;
      if (u * u + v * v > 1 || c == 3) continue;
      const double enhancement = 1.0;  // in k's units: 2 % deep features
      bool valid = true;
      for (int b = 0; b < bands; ++b) valid &= cube.at(r, c, b) != kNodata;
      if (!valid) continue;
      for (int b = 0; b < bands; ++b) cube.at(r, c, b) *= std::exp(-enhancement * k[b]);
      plume[static_cast<size_t>(r * cube.cols + c)] = true;
      ++plumePixels;
    }
  const QString dir = testing::tempDir();
  testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
  ColumnDetectOptions columns =
      columnOptions(dir + "/in.tif", dir + "/columns.tif", DetectMethod::MatchedFilter, {k});
  columns.absorption = true;
  runColumns(columns);
  DetectOptions global =
      detectOptions(dir + "/in.tif", dir + "/global.tif", DetectMethod::MatchedFilter, {k});
  global.detector.absorption = true;
  runQuietly(global);
  const double perColumnRate = detectionRate(testing::samplesOf(dir + "/columns.tif"), plume);
  const double globalRate = detectionRate(testing::samplesOf(dir + "/global.tif"), plume);
  // The enhancement itself, in k's units: about 0 off the plume; on it below the planted 1, as the
  // plume is part of its columns' own mean and covariance (up to a fifth of their pixels: mag1c's
  // first iteration has the same bias).
  const std::vector<double> scores = testing::samplesOf(dir + "/columns.tif");
  double onPlume = 0, offPlume = 0;
  int64_t off = 0;
  for (size_t p = 0; p < plume.size(); ++p) {
    if (std::isnan(scores[p])) continue;
    if (plume[p]) {
      onPlume += scores[p];
    } else {
      offPlume += scores[p];
      ++off;
    }
  }
  onPlume /= static_cast<double>(plumePixels);
  offPlume /= static_cast<double>(off);
  qInfo(
      "plume of %lld pixels, detection rate at a false-alarm rate of 1e-3: per column %.3f, "
      "image-wide %.3f; mean enhancement per column %.3f on the plume (planted 1), %.3f off it",
      static_cast<long long>(plumePixels), perColumnRate, globalRate, onPlume, offPlume);
  QVERIFY2(perColumnRate >= 0.9, qPrintable(QString::number(perColumnRate)));
  QVERIFY2(globalRate <= 0.5, qPrintable(QString::number(globalRate)));
  QVERIFY(onPlume > 0.6 && onPlume < 1.05 && std::fabs(offPlume) < 0.05);
}

void TestDetect::localRxMatchesReference_data() {
  QTest::addColumn<int>("type");
  QTest::addColumn<int>("components");
  QTest::addColumn<int>("window");
  QTest::addColumn<int>("guard");
  QTest::addColumn<double>("shrinkage");
  // A shrinkage below 0: none given, ε is the components' noise variance.
  QTest::newRow("float64 k4 w7 g3") << int(GDT_Float64) << 4 << 7 << 3 << 0.0;
  QTest::newRow("float64 k6 w5 g1 shrunk") << int(GDT_Float64) << 6 << 5 << 1 << 0.05;
  QTest::newRow("uint16 k3 w9 g5") << int(GDT_UInt16) << 3 << 9 << 5 << 0.0;
  QTest::newRow("float64 k4 w7 g3 noise") << int(GDT_Float64) << 4 << 7 << 3 << -1.0;
  QTest::newRow("uint16 k10 w3 g1 noise") << int(GDT_UInt16) << 10 << 3 << 1 << -1.0;
}

// Local RX against the reference on a scene with planted anomalies, targets, nodata pixels and a
// constant band: within 1e-9 of the largest score, NaN where the reference has no background;
// strips of 1, 4 and all rows and a 16 MiB budget give the same bits; no scratch file is left.
// Without a shrinkage, ε is the components' noise variance (within 1e-6 of the reference's, as
// HySime's noise in test_subspace), which scores windows of fewer pixels than components that
// the plain inverse leaves unscored.
void TestDetect::localRxMatchesReference() {
  QFETCH(int, type);
  QFETCH(int, components);
  QFETCH(int, window);
  QFETCH(int, guard);
  QFETCH(double, shrinkage);
  Scene scene = plantedScene(31, 26, 83);
  if (type == GDT_UInt16) {  // nodata 0, which the type holds
    for (double& v : scene.cube.values)
      if (v == kNodata) v = 0;
    scene.cube.nodata.assign(scene.cube.bands, 0.0);
    testing::roundValues(scene.cube);
  }
  const QString dir = testing::tempDir();
  testing::writeCube(scene.cube, (dir + "/in.tif").toStdString(), GDALDataType(type));
  LocalRxOptions options =
      localOptions(dir + "/in.tif", dir + "/out.tif", components, window, guard);
  if (shrinkage >= 0) options.shrinkage = shrinkage;
  const LocalRxResult result = runLocal(options);
  QCOMPARE(result.components, components);
  QCOMPARE(result.unscoredPixels, int64_t{0});
  if (shrinkage >= 0) {
    QCOMPARE(result.noise, 0.0);
  } else {
    const double noise = referenceComponentNoise(scene.cube, components);
    qInfo("components' noise variance %.6g, the reference's %.6g", result.noise, noise);
    QVERIFY2(std::fabs(result.noise - noise) <= 1e-6 * noise, qPrintable(QString::number(noise)));
  }
  const std::vector<double> expected = referenceLocalRx(scene.cube, components, window, guard,
                                                        std::max(shrinkage, 0.0), result.noise);
  const std::vector<double> written = testing::samplesOf(dir + "/out.tif");
  double worst = 0, largest = 0;
  for (const double e : expected)
    if (!std::isnan(e)) largest = std::max(largest, e);
  for (size_t p = 0; p < expected.size(); ++p) {
    if (std::isnan(expected[p])) {
      QVERIFY(std::isnan(written[p]));
      continue;
    }
    worst = std::max(worst, std::fabs(written[p] - expected[p]));
  }
  qInfo("local RX: largest difference %.3g of the largest score %.6g", worst / largest, largest);
  QVERIFY2(worst <= 1e-9 * largest, qPrintable(QString("%1 of %2").arg(worst).arg(largest)));
  for (const int strip : {1, 4, 31}) {
    options.output = (dir + QString("/strip%1.tif").arg(strip)).toStdString();
    options.stripRows = strip;
    runLocal(options);
    const std::vector<double> again = testing::samplesOf(QString::fromStdString(options.output));
    QVERIFY(again.size() == written.size() &&
            std::memcmp(again.data(), written.data(), written.size() * sizeof(double)) == 0);
  }
  options.output = (dir + "/budget.tif").toStdString();
  options.stripRows = 0;
  options.ramBytes = int64_t{16} << 20;
  runLocal(options);
  const std::vector<double> budget = testing::samplesOf(dir + "/budget.tif");
  QVERIFY(budget.size() == written.size() &&
          std::memcmp(budget.data(), written.data(), written.size() * sizeof(double)) == 0);
  QCOMPARE(testing::filesIn(dir), (QStringList{"budget.tif", "in.tif", "out.tif", "strip1.tif",
                                               "strip31.tif", "strip4.tif"}));
  if (window * window - guard * guard <= components) {  // fewer background pixels than components
    options.output = (dir + "/plain.tif").toStdString();
    options.shrinkage = 0.0;
    QVERIFY(runLocal(options).unscoredPixels > 0);
  }
}

// Two materials, each over half of the image, and pixels of the right half's material planted in
// the left half: common in the image, so image-wide RX ranks them among the background, but
// foreign to their neighbourhood, where local RX ranks them first.
void TestDetect::localRxFindsWhatTheImageHides() {
  testing::Cube cube = testing::correlatedCube(60, 60, 20, 89, 3000.0, 60.0);
  std::vector<double> material(20);
  for (int b = 0; b < 20; ++b) material[b] = 400.0 * std::sin(0.4 * b + 1.0);
  std::vector<int64_t> planted;
  planted.reserve(6);
  for (int k = 0; k < 6; ++k) planted.push_back((8 + 8 * k) * 60 + 6 + 3 * (k % 4));
  for (int64_t p = 0; p < cube.pixels(); ++p)
    if (p % 60 >= 30 || std::find(planted.begin(), planted.end(), p) != planted.end())
      for (int b = 0; b < 20; ++b) cube.values[static_cast<size_t>(p * 20 + b)] += material[b];
  const QString dir = testing::tempDir();
  testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float64);
  runLocal(localOptions(dir + "/in.tif", dir + "/local.tif", 5, 9, 3));
  DetectOptions global = detectOptions(dir + "/in.tif", dir + "/global.tif", DetectMethod::Rx, {});
  global.detector.components = 5;
  runQuietly(global);
  const std::vector<int64_t> local = ranksOf(testing::samplesOf(dir + "/local.tif"), planted);
  const std::vector<int64_t> imageWide = ranksOf(testing::samplesOf(dir + "/global.tif"), planted);
  qInfo("planted pixels' ranks of 3600: local RX %lld-%lld, image-wide RX %lld-%lld",
        static_cast<long long>(local.front()), static_cast<long long>(local.back()),
        static_cast<long long>(imageWide.front()), static_cast<long long>(imageWide.back()));
  QVERIFY(local.back() < 6);
  QVERIFY(imageWide.front() > 100);
}

void TestDetect::localRxErrors() {
  const Scene scene = plantedScene(12, 10, 97);
  const QString dir = testing::tempDir();
  testing::writeCube(scene.cube, (dir + "/in.tif").toStdString(), GDT_Float64);
  auto parameterOf = [&](const LocalRxOptions& options) {
    try {
      runLocal(options);
    } catch (const Error& error) {
      return QString::fromStdString(error.parameter());
    }
    return QString();
  };
  const QString in = dir + "/in.tif", out = dir + "/out.tif";
  QCOMPARE(parameterOf(localOptions(in, out, 4, 4, 1)), QString("WINDOW"));
  QCOMPARE(parameterOf(localOptions(in, out, 4, 1, 1)), QString("WINDOW"));
  QCOMPARE(parameterOf(localOptions(in, out, 4, 5, 5)), QString("GUARD"));
  QCOMPARE(parameterOf(localOptions(in, out, 4, 5, 2)), QString("GUARD"));
  QCOMPARE(parameterOf(localOptions(in, out, 65, 5, 1)), QString("COMPONENTS"));
  QCOMPARE(parameterOf(localOptions(in, out, 40, 5, 1)), QString("COMPONENTS"));  // 28 bands
  LocalRxOptions options = localOptions(in, out, 4, 5, 1);
  options.outputType = OutputType::Byte;
  QCOMPARE(parameterOf(options), QString("OUTPUT_TYPE"));
  options = localOptions(in, in, 4, 5, 1);
  QCOMPARE(parameterOf(options), QString("OUTPUT"));
  QCOMPARE(testing::filesIn(dir), QStringList{"in.tif"});
}

// Singular backgrounds without shrinkage are left unscored, whatever rounding leaves of their
// last pivot: 11 valid pixels among nodata, each one's background the other 10, in 10
// components (rank 9; the last pivot is 7e-11 of its variance, not 0, and scored 7.7e17 before).
// With a shrinkage they are scored.
void TestDetect::localRxLeavesSingularBackgrounds() {
  testing::Cube cube;
  cube.rows = cube.cols = 20;
  cube.bands = 12;
  cube.values.assign(static_cast<size_t>(cube.pixels()) * cube.bands, kNodata);
  cube.nodata.assign(cube.bands, kNodata);
  std::mt19937 random(1);
  std::normal_distribution<double> normal(100, 10);
  for (int64_t r = 8; r < 11; ++r)
    for (int64_t c = 8; c < 12; ++c)
      if (r != 10 || c != 11)
        for (int b = 0; b < cube.bands; ++b) cube.at(r, c, b) = normal(random);
  const QString dir = testing::tempDir();
  testing::writeCube(cube, (dir + "/in.tif").toStdString(), GDT_Float32);
  LocalRxOptions options = localOptions(dir + "/in.tif", dir + "/out.tif", 10, 5, 1);
  options.shrinkage = 0.0;
  const LocalRxResult singular = runLocal(options);
  QCOMPARE(singular.unscoredPixels, int64_t{11});
  for (const double score : testing::samplesOf(dir + "/out.tif"))
    QVERIFY(std::isnan(score) || score == kNodata);
  options.shrinkage = 1e-3;
  options.output = (dir + "/shrunk.tif").toStdString();
  QCOMPARE(runLocal(options).unscoredPixels, int64_t{0});
}

// The HTML report of every form of detection: the score band's summary read back equals the
// written scores' (count, histogram total, the highest ten by a sort of them), and the page
// holds the heading, the previews, the histograms and the targets' plot.
void TestDetect::reports() {
  const Scene scene = plantedScene(40, 36, 101);
  const QString dir = testing::tempDir();
  testing::writeCube(scene.cube, (dir + "/in.tif").toStdString(), GDT_Float64);
  DetectOptions options = detectOptions(dir + "/in.tif", dir + "/rx.tif", DetectMethod::Rx, {});
  options.htmlReport = (dir + "/rx.html").toStdString();
  runQuietly(options);
  const auto dataset = testing::openReadOnly(dir + "/rx.tif");
  const ScoreSummary summary = summariseScores(*dataset->GetRasterBand(1), 20, 10);
  std::vector<std::pair<double, int64_t>> scores;
  const std::vector<double> written = testing::samplesOf(dir + "/rx.tif");
  for (size_t p = 0; p < written.size(); ++p)
    if (!std::isnan(written[p]) && written[p] != kNodata)  // the input's nodata, kept
      scores.emplace_back(written[p], static_cast<int64_t>(p));
  std::sort(scores.begin(), scores.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  QCOMPARE(summary.valid, static_cast<int64_t>(scores.size()));
  QCOMPARE(std::accumulate(summary.histogram.begin(), summary.histogram.end(), int64_t{0}),
           summary.valid);
  QCOMPARE(summary.high, scores.front().first);
  QCOMPARE(summary.low, scores.back().first);
  const std::vector<std::pair<double, int64_t>> highest(scores.begin(), scores.begin() + 10);
  QVERIFY(summary.highest == highest);
  // The planted anomalies are among the highest, and the report names them.
  const QString rx = QString::fromUtf8(fileBytes(dir + "/rx.html"));
  QVERIFY(rx.contains("Anomaly detection (RX)") && rx.contains("<svg") &&
          rx.contains("data:image/png;base64,"));
  const int64_t first = summary.highest.front().second;
  QVERIFY(rx.contains(QString("<td>1</td><td>%1</td><td>%2</td>").arg(first / 36).arg(first % 36)));

  options = detectOptions(dir + "/in.tif", dir + "/ace.tif", DetectMethod::Ace, scene.targets);
  options.htmlReport = (dir + "/ace.html").toStdString();
  runQuietly(options);
  const QString ace = QString::fromUtf8(fileBytes(dir + "/ace.html"));
  QVERIFY(ace.contains("Adaptive cosine estimator") && ace.contains("Targets and the image") &&
          ace.contains("ACE: target 2"));

  LocalRxOptions local = localOptions(dir + "/in.tif", dir + "/local.tif", 4, 7, 3);
  local.htmlReport = (dir + "/local.html").toStdString();
  runLocal(local);
  QVERIFY(QString::fromUtf8(fileBytes(dir + "/local.html")).contains("7 x 7 window"));

  ColumnDetectOptions column = columnOptions(dir + "/in.tif", dir + "/column.tif",
                                             DetectMethod::MatchedFilter, scene.targets);
  column.shrinkage = 0.01;
  column.htmlReport = (dir + "/column.html").toStdString();
  runColumns(column);
  QVERIFY(QString::fromUtf8(fileBytes(dir + "/column.html")).contains("each column"));
}

QTEST_GUILESS_MAIN(TestDetect)
#include "test_detect.moc"
