// The unmixing chain against float64 references written here: abundances against an exact solver
// that enumerates every active set (P <= 6), ATGP against plain loops, N-FINDR's result a local
// maximum of the simplex volume (the reference's own principal components and determinants), VCA's
// SNR estimate against plain sums; results independent of strip heights and budgets; synthetic
// scenes with pure patches recovered; bad inputs refused with no file left.

#include "DeviceOption.h"
#include "TestFeedback.h"
#include "TestSupport.h"
#include "core/Error.h"
#include "materials/MaterialCount.h"
#include "pixels/AbundanceSolver.h"
#include "spp/SppJob.h"
#include "synth/Synth.h"
#include "unmixing/AbundanceJob.h"
#include "unmixing/EndmemberJob.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QtTest>

#include <gdal_priv.h>
#include <ogrsf_frmts.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

using namespace hyperstream;

namespace {

using Matrix = std::vector<double>;

// Solves the n x n system a x = b (row-major) by Gaussian elimination with partial pivoting, in
// long double; false when singular.
bool solveLinear(std::vector<long double> a, std::vector<long double> b, int n,
                 std::vector<long double>& x) {
  for (int c = 0; c < n; ++c) {
    int pivot = c;
    for (int r = c + 1; r < n; ++r)
      if (std::fabs(a[r * n + c]) > std::fabs(a[pivot * n + c])) pivot = r;
    if (a[pivot * n + c] == 0) return false;
    for (int k = 0; k < n; ++k) std::swap(a[c * n + k], a[pivot * n + k]);
    std::swap(b[c], b[pivot]);
    for (int r = c + 1; r < n; ++r) {
      const long double f = a[r * n + c] / a[c * n + c];
      for (int k = c; k < n; ++k) a[r * n + k] -= f * a[c * n + k];
      b[r] -= f * b[c];
    }
  }
  x.assign(n, 0);
  for (int r = n - 1; r >= 0; --r) {
    long double s = b[r];
    for (int k = r + 1; k < n; ++k) s -= a[r * n + k] * x[k];
    x[r] = s / a[r * n + r];
  }
  return true;
}

// The exact constrained least-squares abundances: the minimum of ½aᵀGa − bᵀa over the solutions
// of every face (subset S free, the rest zero; with Σa = 1 for FCLS) that are feasible.
std::vector<double> referenceAbundances(const Matrix& gram, const std::vector<double>& b, int p,
                                        AbundanceMethod method) {
  const bool sumToOne = method == AbundanceMethod::Fcls;
  std::vector<double> best;
  long double bestObjective = INFINITY;
  const int first = method == AbundanceMethod::Ucls ? (1 << p) - 1 : 1;
  for (int mask = first; mask < (1 << p); ++mask) {
    std::vector<int> s;
    for (int i = 0; i < p; ++i)
      if (mask & (1 << i)) s.push_back(i);
    const int k = static_cast<int>(s.size()), n = k + (sumToOne ? 1 : 0);
    std::vector<long double> a(static_cast<size_t>(n) * n, 0), rhs(n, 0), x;
    for (int r = 0; r < k; ++r) {
      for (int c = 0; c < k; ++c) a[r * n + c] = gram[s[r] * p + s[c]];
      rhs[r] = b[s[r]];
      if (sumToOne) a[r * n + k] = a[k * n + r] = 1;
    }
    if (sumToOne) rhs[k] = 1;
    if (!solveLinear(a, rhs, n, x)) continue;
    std::vector<double> candidate(p, 0.0);
    bool feasible = true;
    for (int r = 0; r < k; ++r) {
      candidate[s[r]] = static_cast<double>(x[r]);
      feasible = feasible && (method == AbundanceMethod::Ucls || x[r] >= -1e-13);
    }
    if (!feasible) continue;
    long double objective = 0;
    for (int i = 0; i < p; ++i) {
      objective -= b[i] * static_cast<long double>(candidate[i]);
      for (int j = 0; j < p; ++j) objective += 0.5L * candidate[i] * gram[i * p + j] * candidate[j];
    }
    if (objective < bestObjective) {
      bestObjective = objective;
      best = candidate;
    }
  }
  return best;
}

Matrix gramOf(const Matrix& spectra, int p, int bands) {
  Matrix g(static_cast<size_t>(p) * p, 0.0);
  for (int i = 0; i < p; ++i)
    for (int j = 0; j < p; ++j)
      for (int k = 0; k < bands; ++k)
        g[i * p + j] += spectra[i * bands + k] * spectra[j * bands + k];
  return g;
}

// Random positive spectra (p x bands, values 500 - 5000) and a cube of their mixtures: most
// abundances in the simplex, some beyond it (negative or summing past one), with noise.
struct Mixture {
  int p = 0;
  Matrix spectra;
  testing::Cube cube;
};

Mixture mixtureCube(int64_t rows, int64_t cols, int bands, int p, uint64_t seed, double noise) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  Mixture m;
  m.p = p;
  for (int i = 0; i < p * bands; ++i) m.spectra.push_back(500 + 4500 * unit(random));
  testing::Cube& cube = m.cube;
  cube.rows = rows;
  cube.cols = cols;
  cube.bands = bands;
  cube.nodata.assign(bands, std::nan(""));
  cube.values.resize(rows * cols * bands);
  for (int64_t px = 0; px < rows * cols; ++px) {
    std::vector<double> a(p);
    double total = 0;
    for (double& v : a) total += v = -std::log(unit(random) + 1e-12);  // Dirichlet(1)
    for (double& v : a) v = v / total * 1.3 - 0.06;                    // some outside the simplex
    for (int b = 0; b < bands; ++b) {
      double x = noise * normal(random);
      for (int e = 0; e < p; ++e) x += a[e] * m.spectra[e * bands + b];
      cube.values[px * bands + b] = x;
    }
  }
  return m;
}

EndmemberTable tableOf(const Matrix& spectra, int p, int bands) {
  EndmemberTable table;
  for (int b = 0; b < bands; ++b) table.bandNames.push_back("band " + std::to_string(b + 1));
  for (int e = 0; e < p; ++e) {
    Endmember em;
    em.id = "em" + std::to_string(e + 1);
    em.spectrum.assign(spectra.begin() + static_cast<int64_t>(e) * bands,
                       spectra.begin() + static_cast<int64_t>(e + 1) * bands);
    table.endmembers.push_back(em);
  }
  return table;
}

QString writeTable(const EndmemberTable& table, const QString& path) {
  QFile file(path);
  file.open(QIODevice::WriteOnly);
  file.write(endmembersCsv(table));
  return path;
}

AbundanceResult unmixFile(const QString& input, const QString& csv, const QString& output,
                          AbundanceMethod method, const QString& rmse = {}, int64_t stripRows = 0,
                          int64_t ramBytes = kDefaultRamBytes) {
  AbundanceOptions options;
  options.input = input.toStdString();
  options.endmembers = csv.toStdString();
  options.output = output.toStdString();
  options.method = method;
  options.rmseOutput = rmse.toStdString();
  options.outputType = OutputType::Float64;
  options.stripRows = stripRows;
  options.ramBytes = ramBytes;
  options.device = parseDevice("cpu");
  TestFeedback feedback;
  return runAbundances(options, feedback);
}

EndmemberResult extract(const QString& input, const QString& output, EndmemberMethod method,
                        int count, int64_t stripRows = 0, const QString& locations = {},
                        int averageWindow = 1, uint64_t seed = 1) {
  EndmemberOptions options;
  options.input = input.toStdString();
  options.output = output.toStdString();
  options.search.method = method;
  options.search.count = count;
  options.search.seed = seed;
  options.stripRows = stripRows;
  options.locations = locations.toStdString();
  options.averageWindow = averageWindow;
  options.device = parseDevice("cpu");
  TestFeedback feedback;
  return runEndmembers(options, feedback);
}

std::vector<std::pair<int64_t, int64_t>> positions(const EndmemberResult& result) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const Endmember& e : result.table.endmembers) out.emplace_back(e.row, e.col);
  return out;
}

// ATGP by its definition: the largest norm, then the largest norm of what the pixels found so
// far (orthonormalised by classical Gram-Schmidt) do not explain; every residual in full.
std::vector<std::pair<int64_t, int64_t>> referenceAtgp(const testing::Cube& cube, int count) {
  const int n = cube.bands;
  std::vector<std::vector<double>> basis;
  std::vector<std::pair<int64_t, int64_t>> found;
  for (int k = 0; k < count; ++k) {
    double best = -1;
    int64_t bestPixel = -1;
    for (int64_t px = 0; px < cube.pixels(); ++px) {
      if (!testing::referenceValid(cube, px)) continue;
      std::vector<double> r(cube.values.begin() + px * n, cube.values.begin() + (px + 1) * n);
      for (const auto& q : basis) {
        double along = 0;
        for (int b = 0; b < n; ++b) along += q[b] * cube.values[px * n + b];
        for (int b = 0; b < n; ++b) r[b] -= along * q[b];
      }
      double norm = 0;
      for (double v : r) norm += v * v;
      if (norm > best) {
        best = norm;
        bestPixel = px;
      }
    }
    std::vector<double> q(cube.values.begin() + bestPixel * n,
                          cube.values.begin() + (bestPixel + 1) * n);
    for (int twice = 0; twice < 2; ++twice)
      for (const auto& e : basis) {
        double along = 0;
        for (int b = 0; b < n; ++b) along += e[b] * q[b];
        for (int b = 0; b < n; ++b) q[b] -= along * e[b];
      }
    double norm = 0;
    for (double v : q) norm += v * v;
    for (double& v : q) v /= std::sqrt(norm);
    basis.push_back(q);
    found.emplace_back(bestPixel / cube.cols, bestPixel % cube.cols);
  }
  return found;
}

long double determinant(std::vector<long double> a, int n) {
  long double det = 1;
  for (int c = 0; c < n; ++c) {
    int pivot = c;
    for (int r = c + 1; r < n; ++r)
      if (std::fabs(a[r * n + c]) > std::fabs(a[pivot * n + c])) pivot = r;
    if (a[pivot * n + c] == 0) return 0;
    if (pivot != c) {
      for (int k = 0; k < n; ++k) std::swap(a[c * n + k], a[pivot * n + k]);
      det = -det;
    }
    det *= a[c * n + c];
    for (int r = c + 1; r < n; ++r) {
      const long double f = a[r * n + c] / a[c * n + c];
      for (int k = c; k < n; ++k) a[r * n + k] -= f * a[c * n + k];
    }
  }
  return std::fabs(det);
}

double angleDegrees(const double* a, const double* b, const std::vector<char>& live) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < live.size(); ++i) {
    if (!live[i]) continue;
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return std::acos(std::clamp(ab / std::sqrt(aa * bb), -1.0, 1.0)) * 180 / M_PI;
}

EndmemberOptions endmemberOptions(const QString& input, const QString& output,
                                  EndmemberMethod method, int count) {
  EndmemberOptions options;
  options.input = input.toStdString();
  options.output = output.toStdString();
  options.search.method = method;
  options.search.count = count;
  options.device = parseDevice("cpu");
  return options;
}

constexpr int kWater = 2;  // the synthetic scene's third endmember, the dark one

// `hyperstream synth`'s scene with pure patches and noise at 35 dB, and what it truly holds.
struct SyntheticTruth {
  int count = 0, bands = 0;
  Matrix spectra;                  // count x bands, reflectance
  std::vector<char> live;          // bands that are not dead
  testing::Cube abundances;        // count per pixel
  std::vector<double> patchAngle;  // per endmember: its pure pixels' largest angle from it

  double angle(const std::vector<double>& spectrum, int e) const {
    return angleDegrees(spectrum.data(), &spectra[static_cast<size_t>(e) * bands], live);
  }
  // For each true endmember, the nearest extracted one.
  std::vector<int> match(const EndmemberTable& table) const {
    std::vector<int> nearest(count, 0);
    for (int e = 0; e < count; ++e)
      for (size_t k = 1; k < table.endmembers.size(); ++k)
        if (angle(table.endmembers[k].spectrum, e) <
            angle(table.endmembers[nearest[e]].spectrum, e))
          nearest[e] = static_cast<int>(k);
    return nearest;
  }
  // RMSE of estimated abundances (matched bands) against the truth over the valid pixels.
  double abundanceRmse(const testing::Cube& estimated, const std::vector<int>& matched) const {
    double sum = 0;
    int64_t values = 0;
    for (int64_t px = 0; px < estimated.pixels(); ++px) {
      if (std::isnan(estimated.values[px * estimated.bands])) continue;
      for (int e = 0; e < count; ++e) {
        const double d =
            estimated.values[px * estimated.bands + matched[e]] - abundances.values[px * count + e];
        sum += d * d;
        ++values;
      }
    }
    return std::sqrt(sum / values);
  }
};

SyntheticTruth writeSyntheticScene(const QString& path, uint64_t seed = 1) {
  SynthOptions synth;
  synth.seed = seed;
  synth.output = path.toStdString();
  synth.rows = synth.cols = 160;
  synth.bands = 80;
  synth.type = GDT_UInt16;
  synth.endmembers = 5;
  synth.purePatch = 6;
  synth.snrDb = 35;
  synth.shading = 0;  // brightness changes are not mixtures: FCLS cannot follow them
  synth.writeTruth = true;
  TestFeedback feedback;
  const SynthResult result = synthesizeScene(synth, feedback);
  SyntheticTruth truth;
  truth.count = synth.endmembers;
  truth.bands = synth.bands;
  truth.live.assign(synth.bands, 1);
  for (const int dead : result.deadBands) truth.live[dead - 1] = 0;
  truth.spectra = endmemberSpectra(synth.endmembers, result.wavelengthsNm, synth.seed);
  truth.abundances = testing::readCube(result.abundancesPath);
  const testing::Cube cube = testing::readCube(synth.output);
  truth.patchAngle.assign(truth.count, 0.0);
  for (int64_t px = 0; px < cube.pixels(); ++px)
    for (int e = 0; e < truth.count; ++e)
      if (truth.abundances.values[px * truth.count + e] == 1.0) {
        const std::vector<double> x(cube.values.begin() + px * truth.bands,
                                    cube.values.begin() + (px + 1) * truth.bands);
        truth.patchAngle[e] = std::max(truth.patchAngle[e], truth.angle(x, e));
      }
  return truth;
}

template <class Run>
void expectError(const Run& run, const QString& output, const char* parameter, const char* text) {
  try {
    run();
    QFAIL("expected an error");
  } catch (const Error& e) {
    QVERIFY2(QString::fromStdString(e.parameter()) == parameter,
             qPrintable(QString("parameter %1: %2").arg(e.parameter().c_str(), e.what())));
    QVERIFY2(QString(e.what()).contains(text), e.what());
  }
  QVERIFY(!QFileInfo::exists(output));
}

}  // namespace

class UnmixingTests : public QObject {
  Q_OBJECT
 private slots:
  // The active-set solver against every face's exact solution, for random problems with P <= 6.
  void solverMatchesEnumeration() {
    std::mt19937_64 random(7);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    double worst = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      const int p = 2 + trial % 5, bands = 12;
      Matrix spectra(static_cast<size_t>(p) * bands);
      for (double& v : spectra) v = unit(random);
      const Matrix gram = gramOf(spectra, p, bands);
      std::vector<double> x(bands), b(p, 0.0);
      for (double& v : x) v = 2 * unit(random) - 0.3;
      for (int e = 0; e < p; ++e)
        for (int k = 0; k < bands; ++k) b[e] += spectra[e * bands + k] * x[k];
      for (const AbundanceMethod method :
           {AbundanceMethod::Fcls, AbundanceMethod::Nnls, AbundanceMethod::Ucls}) {
        AbundanceSolver<kMaxEndmembers> solver(gram.data(), p, method);
        std::vector<double> a(p);
        QVERIFY(solver.solve(b.data(), a.data()));
        const std::vector<double> expected = referenceAbundances(gram, b, p, method);
        for (int e = 0; e < p; ++e) worst = std::max(worst, std::abs(a[e] - expected[e]));
        if (method == AbundanceMethod::Fcls) {
          double sum = 0;
          for (double v : a) sum += v;
          QVERIFY(std::abs(sum - 1) < 1e-12);
        }
        if (method != AbundanceMethod::Ucls) QVERIFY(*std::min_element(a.begin(), a.end()) >= 0);
      }
    }
    qInfo("largest difference from the enumerated reference: %.3g", worst);
    QVERIFY2(worst < 1e-9, qPrintable(QString::number(worst)));
  }

  // File to file: every valid pixel's abundances and RMSE against the reference; nodata holes and
  // NaN written as NaN; any strip height gives the same bits.
  void abundancesMatchReference() {
    const int bands = 9, p = 4;
    Mixture m = mixtureCube(23, 19, bands, p, 3, 20.0);
    m.cube.nodata.assign(bands, -9999);
    for (int b = 0; b < bands; ++b) m.cube.values[5 * bands + b] = -9999;
    m.cube.values[8 * bands + 2] = -9999;
    m.cube.values[11 * bands + 3] = NAN;
    const QString dir = testing::tempDir();
    testing::writeCube(m.cube, (dir + "/cube.tif").toStdString(), GDT_Float64);
    const QString csv = writeTable(tableOf(m.spectra, p, bands), dir + "/em.csv");
    const Matrix gram = gramOf(m.spectra, p, bands);
    for (const AbundanceMethod method :
         {AbundanceMethod::Fcls, AbundanceMethod::Nnls, AbundanceMethod::Ucls}) {
      const QString name = QString::fromStdString(abundanceMethodName(method));
      const QString out = dir + "/" + name + ".tif", rmse = dir + "/" + name + "_rmse.tif";
      const AbundanceResult result = unmixFile(dir + "/cube.tif", csv, out, method, rmse);
      QCOMPARE(result.validPixels, int64_t{23 * 19 - 3});
      const testing::Cube written = testing::readCube(out.toStdString());
      const testing::Cube error = testing::readCube(rmse.toStdString());
      double worst = 0, worstRmse = 0;
      for (int64_t px = 0; px < m.cube.pixels(); ++px) {
        if (!testing::referenceValid(m.cube, px)) {
          QVERIFY(std::isnan(written.values[px * p]));
          QVERIFY(std::isnan(error.values[px]));
          continue;
        }
        std::vector<double> b(p, 0.0);
        for (int e = 0; e < p; ++e)
          for (int k = 0; k < bands; ++k)
            b[e] += m.spectra[e * bands + k] * m.cube.values[px * bands + k];
        const std::vector<double> a = referenceAbundances(gram, b, p, method);
        double residual = 0;
        for (int k = 0; k < bands; ++k) {
          double r = m.cube.values[px * bands + k];
          for (int e = 0; e < p; ++e) r -= a[e] * m.spectra[e * bands + k];
          residual += r * r;
        }
        for (int e = 0; e < p; ++e)
          worst = std::max(worst, std::abs(written.values[px * p + e] - a[e]));
        const double expectedRmse = std::sqrt(residual / bands);
        worstRmse = std::max(worstRmse, std::abs(error.values[px] - expectedRmse) / expectedRmse);
      }
      qInfo("%s: abundances within %.3g, RMSE within %.3g relative", qPrintable(name), worst,
            worstRmse);
      QVERIFY2(worst < 1e-9, qPrintable(QString::number(worst)));
      QVERIFY2(worstRmse < 1e-9, qPrintable(QString::number(worstRmse)));
      for (const int64_t rows : {1, 7}) {
        const QString again = dir + QString("/%1_%2.tif").arg(name).arg(rows);
        unmixFile(dir + "/cube.tif", csv, again, method, {}, rows);
        const testing::Cube strips = testing::readCube(again.toStdString());
        QCOMPARE(strips.values.size(), written.values.size());
        QVERIFY(std::memcmp(strips.values.data(), written.values.data(),
                            written.values.size() * sizeof(double)) == 0);
      }
    }
  }

  // ATGP's pixels are those of the definition's plain loops, whatever the strip height; the
  // input's nodata holes are never picked.
  void atgpMatchesPlainLoops() {
    testing::Cube cube = testing::correlatedCube(31, 27, 11, 5, 3000, 400);
    testing::roundValues(cube);
    cube.nodata.assign(11, -9999);
    for (int b = 0; b < 11; ++b) cube.values[40 * 11 + b] = -9999;
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/cube.tif").toStdString(), GDT_Int16);
    const auto expected = referenceAtgp(cube, 6);
    for (const int64_t rows : {0, 1, 5}) {
      const EndmemberResult result =
          extract(dir + "/cube.tif", dir + QString("/atgp%1.csv").arg(rows), EndmemberMethod::Atgp,
                  6, rows);
      QVERIFY(positions(result) == expected);
      QCOMPARE(result.search.passes, 6);
    }
    // Each pixel's residual energy kept and deflated a direction at a time (the default), or,
    // where the budget holds no value per pixel, every direction projected in every pass: the
    // same pixels.
    testing::Cube wide = testing::correlatedCube(1100, 1000, 3, 8, 3000, 400);
    testing::writeCube(wide, (dir + "/wide.tif").toStdString(), GDT_Float32);
    EndmemberOptions options =
        endmemberOptions(dir + "/wide.tif", dir + "/wide.csv", EndmemberMethod::Atgp, 3);
    TestFeedback feedback;
    const EndmemberResult kept = runEndmembers(options, feedback);
    options.ramBytes = 16ll << 20;
    const EndmemberResult passes = runEndmembers(options, feedback);
    QCOMPARE(kept.search.keptSearches, 3);
    QCOMPARE(passes.search.keptSearches, 0);
    QVERIFY(positions(kept) == positions(passes));
  }

  // N-FINDR ends at a local maximum: no pixel in place of any endmember makes a larger simplex in
  // the first P - 1 principal components (the reference's PCA, determinants in long double), and
  // the volume never fell below ATGP's start.
  void nfindrEndsAtLocalMaximum() {
    const int p = 5;
    testing::Cube cube = testing::smoothScene(40, 36, 14, 11);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/scene.tif").toStdString(), GDT_Float32);
    cube = testing::readCube((dir + "/scene.tif").toStdString());  // as Float32 holds it
    const EndmemberResult result =
        extract(dir + "/scene.tif", dir + "/nfindr.csv", EndmemberMethod::Nfindr, p);
    QVERIFY(result.search.converged);
    QVERIFY(result.search.volumeGrowth >= 1);
    const testing::Reference pca = testing::referencePca(cube);
    const int n = cube.bands;
    auto column = [&](int64_t px) {
      std::vector<long double> y{1.0L};
      for (int k = 0; k < p - 1; ++k) {
        long double v = 0;
        for (int b = 0; b < n; ++b)
          v += pca.vectors[k][b] * (cube.values[px * n + b] - pca.mean[b]);
        y.push_back(v);
      }
      return y;
    };
    std::vector<std::vector<long double>> columns;
    for (const Endmember& e : result.table.endmembers)
      columns.push_back(column(e.row * cube.cols + e.col));
    auto volume = [&](const std::vector<std::vector<long double>>& cols) {
      std::vector<long double> a(static_cast<size_t>(p) * p);
      for (int i = 0; i < p; ++i)
        for (int j = 0; j < p; ++j) a[i * p + j] = cols[j][i];
      return determinant(a, p);
    };
    const long double current = volume(columns);
    QVERIFY(current > 0);
    long double largestRatio = 0;
    for (int j = 0; j < p; ++j)
      for (int64_t px = 0; px < cube.pixels(); ++px) {
        if (!testing::referenceValid(cube, px)) continue;
        auto replaced = columns;
        replaced[j] = column(px);
        largestRatio = std::max(largestRatio, volume(replaced) / current);
      }
    qInfo("largest volume ratio of a single replacement: %.12Lg", largestRatio);
    QVERIFY(largestRatio < 1 + 1e-6);
  }

  // The material count's curve (materials/MaterialCount.h): the sampler takes the same pixels
  // whatever the strips; each point's mean RMSE is the enumerated FCLS reference's with the
  // point's endmembers, the curve never rises, and the count is its elbow or HySime's dimension
  // as the rule says.
  void materialCurveMatchesReference() {
    testing::Cube cube = testing::smoothScene(41, 37, 12, 17);
    cube.nodata.assign(cube.bands, std::nan(""));
    const int64_t pixels = cube.pixels();
    const int64_t invalid = 127 * pixels / 1000;  // the 64th of the 500 picked, made invalid
    cube.values[invalid * cube.bands + 3] = std::nan("");
    StripView whole;
    whole.data = cube.values.data();
    whole.type = SampleType::Float64;
    whole.pixels = pixels;
    whole.bands = cube.bands;
    whole.nodata = cube.nodata.data();
    whole.groupPixels = pixels;
    PixelSampler once(pixels, 500);
    once.take(whole);
    // Strips of 7 rows, and two workers' halves merged: the same sample.
    PixelSampler strips(pixels, 500);
    for (int64_t row0 = 0; row0 < cube.rows; row0 += 7) {
      StripView strip = whole;
      strip.firstPixel = row0 * cube.cols;
      strip.pixels = std::min<int64_t>(7, cube.rows - row0) * cube.cols;
      strip.data = cube.values.data() + strip.firstPixel * cube.bands;
      strips.take(strip);
    }
    QVERIFY(strips.sample().pixels == once.sample().pixels);
    QVERIFY(strips.sample().values == once.sample().values);
    std::vector<PixelSample> halves;
    for (const int64_t row0 : {int64_t{0}, int64_t{20}}) {
      PixelSampler half(pixels, 500);
      StripView strip = whole;
      strip.firstPixel = 0;  // each worker counts from its own first row
      strip.pixels = (row0 == 0 ? 20 : cube.rows - 20) * cube.cols;
      strip.data = cube.values.data() + row0 * cube.cols * cube.bands;
      half.take(strip, row0 * cube.cols);
      halves.push_back(half.sample());
    }
    QVERIFY(PixelSampler::merged(halves).pixels == once.sample().pixels);
    const PixelSample& sample = once.sample();
    QCOMPARE(sample.size(), int64_t{499});
    for (int64_t j = 0, i = 0; j < 500; ++j) {  // pixel floor((j + 1/2) N / S)
      const int64_t picked = (2 * j + 1) * pixels / 1000;
      if (picked == invalid) continue;
      QCOMPARE(sample.pixels[i++], picked);
    }

    for (const int dimension : {3, 9}) {
      const MaterialCount count = countMaterials(sample, dimension, 6);
      QVERIFY(!count.counts.empty());
      for (size_t k = 0; k < count.counts.size(); ++k) {
        const std::vector<int64_t>& endmembers = count.endmembers[k];
        const int p = count.counts[k];
        QCOMPARE(static_cast<int>(endmembers.size()), p);
        Matrix gram(static_cast<size_t>(p) * p, 0.0);
        for (int i = 0; i < p; ++i)
          for (int j = 0; j < p; ++j)
            for (int b = 0; b < sample.bands; ++b)
              gram[i * p + j] +=
                  sample.spectrum(endmembers[i])[b] * sample.spectrum(endmembers[j])[b];
        long double sum = 0;
        for (int64_t px = 0; px < sample.size(); ++px) {
          const double* x = sample.spectrum(px);
          std::vector<double> b(p, 0.0);
          for (int i = 0; i < p; ++i)
            for (int band = 0; band < sample.bands; ++band)
              b[i] += sample.spectrum(endmembers[i])[band] * x[band];
          const std::vector<double> a = referenceAbundances(gram, b, p, AbundanceMethod::Fcls);
          long double residual = 0;
          for (int band = 0; band < sample.bands; ++band) {
            long double fit = 0;
            for (int i = 0; i < p; ++i) fit += a[i] * sample.spectrum(endmembers[i])[band];
            residual += (x[band] - fit) * (x[band] - fit);
          }
          sum += std::sqrt(residual / sample.bands);
        }
        const double reference = static_cast<double>(sum / sample.size());
        QVERIFY2(
            std::abs(count.meanRmse[k] - reference) <= 1e-9 * reference,
            qPrintable(
                QString("P = %1: %2 against %3").arg(p).arg(count.meanRmse[k]).arg(reference)));
        if (k > 0) QVERIFY(count.meanRmse[k] <= count.meanRmse[k - 1]);
      }
      // A dimension of 3 leaves no room for an elbow below it; 9 (6 at most here) does.
      QVERIFY(count.elbow == 0 ||
              count.counts.back() == std::min(6, count.elbow + kShownPastElbow));
      if (dimension == 3)
        QCOMPARE(count.count, 3);
      else
        QCOMPARE(count.count, count.elbow > 0 && count.elbow + kAgreement < 6 ? count.elbow : 6);
      qInfo("HySime %d: %d materials; curve %s", dimension, count.count, count.curveText().c_str());
    }
  }

  // VCA: its SNR estimate is the formula's, from plain sums; a seed gives the same pixels at any
  // strip height and budget.
  void vcaIsReproducibleAndEstimatesSnr() {
    const int p = 4;
    testing::Cube cube = testing::smoothScene(33, 30, 12, 13);
    const QString dir = testing::tempDir();
    testing::writeCube(cube, (dir + "/scene.tif").toStdString(), GDT_Float64);
    const EndmemberResult first =
        extract(dir + "/scene.tif", dir + "/vca.csv", EndmemberMethod::Vca, p, 0, {}, 1, 42);
    for (const int64_t rows : {1, 4}) {
      const EndmemberResult again =
          extract(dir + "/scene.tif", dir + "/vca2.csv", EndmemberMethod::Vca, p, rows, {}, 1, 42);
      QVERIFY(positions(again) == positions(first));
    }
    // Kept coordinates (the default budget) or a pass per search (a budget too small to keep
    // them): the same pixels.
    testing::Cube wide = testing::smoothScene(600, 500, 6, 21);
    testing::writeCube(wide, (dir + "/wide.tif").toStdString(), GDT_Float32);
    for (const VcaProjection projection : {VcaProjection::Projective, VcaProjection::Subspace}) {
      EndmemberOptions options =
          endmemberOptions(dir + "/wide.tif", dir + "/wide.csv", EndmemberMethod::Vca, p);
      options.search.projection = projection;
      TestFeedback feedback;
      const EndmemberResult kept = runEndmembers(options, feedback);
      options.ramBytes = 16ll << 20;
      const EndmemberResult streamed = runEndmembers(options, feedback);
      QCOMPARE(kept.search.passes, 2);
      QCOMPARE(streamed.search.passes, p + 1 + (projection == VcaProjection::Subspace ? 1 : 0));
      QVERIFY(positions(kept) == positions(streamed));
    }
    // The estimate: P_y = Σ|x|²/N, P_x = Σ of the p largest eigenvalues of the covariance (/N)
    // plus |mean|²; SNR = 10 log10((P_x - p/L P_y) / (P_y - P_x)).
    const testing::Reference pca = testing::referencePca(cube);
    const auto count = static_cast<double>(pca.valid);
    double powerY = 0, meanPower = 0;
    for (int64_t px = 0; px < cube.pixels(); ++px)
      for (int b = 0; b < cube.bands; ++b)
        powerY += cube.values[px * cube.bands + b] * cube.values[px * cube.bands + b];
    powerY /= count;
    for (double m : pca.mean) meanPower += m * m;
    double powerX = meanPower;
    for (int k = 0; k < p; ++k) powerX += pca.eigenvalues[k] * (count - 1) / count;
    const double snr = 10 * std::log10((powerX - p * powerY / cube.bands) / (powerY - powerX));
    qInfo("VCA SNR %.6f dB, reference %.6f dB", first.search.snrDb, snr);
    QVERIFY(std::abs(first.search.snrDb - snr) < 1e-6 * std::abs(snr));
    // Auto's look at dark pixels: brightness b = xᵀ U Uᵀ mean (U: the p leading eigenvectors of
    // the uncentred second moments); the SNR of a pixel at mean(b) - 2 sd(b), divided by b.
    const int n = cube.bands;
    std::vector<double> second(static_cast<size_t>(n) * n, 0.0), vectors;
    for (int64_t px = 0; px < cube.pixels(); ++px)
      if (testing::referenceValid(cube, px))
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j)
            second[static_cast<size_t>(i) * n + j] +=
                cube.values[px * n + i] * cube.values[px * n + j] / count;
    const std::vector<double> values = testing::jacobi(second, n, vectors);
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return values[a] > values[b]; });
    std::vector<double> direction(n, 0.0);  // U Uᵀ mean
    for (int k = 0; k < p; ++k) {
      double along = 0;
      for (int i = 0; i < n; ++i)
        along += vectors[static_cast<size_t>(i) * n + order[k]] * pca.mean[i];
      for (int i = 0; i < n; ++i)
        direction[i] += along * vectors[static_cast<size_t>(i) * n + order[k]];
    }
    double sum = 0, squares = 0;
    for (int64_t px = 0; px < cube.pixels(); ++px) {
      if (!testing::referenceValid(cube, px)) continue;
      double b = 0;
      for (int i = 0; i < n; ++i) b += direction[i] * cube.values[px * n + i];
      sum += b;
      squares += b * b;
    }
    const double mean = sum / count, sd = std::sqrt(squares / count - mean * mean);
    const double dark = snr + 20 * std::log10((mean - 2 * sd) / mean);
    qInfo("dark pixels' SNR %.6f dB, reference %.6f dB", first.search.darkSnrDb, dark);
    QVERIFY(std::abs(first.search.darkSnrDb - dark) < 1e-6 * std::abs(dark));
    const double threshold = 15 + 10 * std::log10(p);
    QCOMPARE(first.search.projective, snr >= threshold && dark >= threshold);
  }

  // A generated scene with pure patches and sensor-like noise (35 dB over the scene, the same in
  // every band): N-FINDR and VCA (its own choice of projection) match each true endmember by an
  // extracted one no farther than the noisy pixels of its own pure patch are from it, averaging
  // over a 3 x 3 homogeneous window, searching the scene itself or noise-adjusted SPP's output
  // (spectra from the scene); FCLS on those endmembers within RMSE 0.03 of the true abundances.
  // After published SPP the bright endmembers are still found; the dark one (water, whose noisy
  // pixels SPP pulls towards the mean) is only logged.
  void syntheticSceneRecovered_data() {
    QTest::addColumn<int>("seed");
    QTest::newRow("seed 1") << 1;
    QTest::newRow("seed 3") << 3;
  }
  void syntheticSceneRecovered() {
    QFETCH(int, seed);
    const QString dir = testing::tempDir();
    const SyntheticTruth truth = writeSyntheticScene(dir + "/scene.tif", seed);
    TestFeedback feedback;
    for (const bool noiseAdjusted : {false, true}) {
      SppOptions spp;
      spp.input = (dir + "/scene.tif").toStdString();
      spp.output = (dir + (noiseAdjusted ? "/spp_noise.tif" : "/spp.tif")).toStdString();
      spp.device = parseDevice("cpu");
      spp.noiseAdjusted = noiseAdjusted;
      runSpp(spp, feedback);
    }
    for (const QString& locations : {QString(), dir + "/spp.tif", dir + "/spp_noise.tif"})
      for (const EndmemberMethod method : {EndmemberMethod::Nfindr, EndmemberMethod::Vca}) {
        const QString name = QString::fromStdString(endmemberMethodName(method)) +
                             (locations.isEmpty() ? "" : "_" + QFileInfo(locations).baseName());
        EndmemberOptions options =
            endmemberOptions(dir + "/scene.tif", dir + "/" + name + ".csv", method, truth.count);
        options.locations = locations.toStdString();
        options.averageWindow = 3;
        const EndmemberResult result = runEndmembers(options, feedback);
        // VCA's own choice: the SNR is high, but water's would not survive the projective scaling
        // (the SPP output, whose dark pixels are pulled towards the mean, may take it).
        if (method == EndmemberMethod::Vca && locations.isEmpty())
          QVERIFY(!result.search.projective);
        const std::vector<int> match = truth.match(result.table);
        const bool publishedSpp = locations.endsWith("/spp.tif");
        for (int e = 0; e < truth.count; ++e) {
          const double angle = truth.angle(result.table.endmembers[match[e]].spectrum, e);
          qInfo("%s: endmember %d at %.2f degrees (its patch's pixels up to %.2f)",
                qPrintable(name), e + 1, angle, truth.patchAngle[e]);
          if (!publishedSpp || e != kWater) QVERIFY(angle <= truth.patchAngle[e]);
        }
        if (publishedSpp) continue;
        unmixFile(dir + "/scene.tif", dir + "/" + name + ".csv", dir + "/fcls.tif",
                  AbundanceMethod::Fcls);
        const double rmse =
            truth.abundanceRmse(testing::readCube((dir + "/fcls.tif").toStdString()), match);
        qInfo("FCLS on %s's endmembers: RMSE %.4f against the true abundances", qPrintable(name),
              rmse);
        QVERIFY(rmse <= 0.03);
      }
  }

  // Band-interleaved files (GeoTIFF INTERLEAVE=BAND, ENVI BSQ) are read band-major, as they lie,
  // and give the pixel-interleaved file's pixels and abundances bit for bit.
  void bandInterleavedFiles() {
    const int bands = 9, p = 4;
    Mixture m = mixtureCube(37, 29, bands, p, 12, 15.0);
    testing::roundValues(m.cube);
    m.cube.nodata.assign(bands, 0);
    for (int b = 0; b < bands; ++b) m.cube.values[17 * bands + b] = 0;
    const QString dir = testing::tempDir();
    testing::writeCube(m.cube, (dir + "/pixel.tif").toStdString(), GDT_UInt16);
    testing::writeCube(m.cube, (dir + "/band.tif").toStdString(), GDT_UInt16, "GTiff",
                       {"INTERLEAVE=BAND"});
    testing::writeCube(m.cube, (dir + "/bsq.img").toStdString(), GDT_UInt16, "ENVI");
    const QString csv = writeTable(tableOf(m.spectra, p, bands), dir + "/em.csv");
    for (const EndmemberMethod method :
         {EndmemberMethod::Atgp, EndmemberMethod::Vca, EndmemberMethod::Nfindr}) {
      const EndmemberResult expected = extract(dir + "/pixel.tif", dir + "/pixel.csv", method, p);
      for (const QString name : {"band.tif", "bsq.img"})
        for (const int64_t rows : {0, 1, 7}) {
          const EndmemberResult result =
              extract(dir + "/" + name, dir + "/other.csv", method, p, rows);
          QVERIFY(positions(result) == positions(expected));
          for (int e = 0; e < p; ++e)
            QVERIFY(result.table.endmembers[e].spectrum == expected.table.endmembers[e].spectrum);
        }
    }
    // Streamed (the cube beyond the budget): the band-interleaved file is read band-major.
    testing::Cube wide = testing::smoothScene(1000, 1000, 8, 4);
    testing::roundValues(wide);
    testing::writeCube(wide, (dir + "/wide_pixel.tif").toStdString(), GDT_UInt16);
    testing::writeCube(wide, (dir + "/wide_band.tif").toStdString(), GDT_UInt16, "GTiff",
                       {"INTERLEAVE=BAND"});
    for (const EndmemberMethod method : {EndmemberMethod::Atgp, EndmemberMethod::Vca}) {
      EndmemberOptions options =
          endmemberOptions(dir + "/wide_pixel.tif", dir + "/wide.csv", method, 3);
      options.ramBytes = 16ll << 20;
      TestFeedback feedback;
      const EndmemberResult expected = runEndmembers(options, feedback);
      options.input = (dir + "/wide_band.tif").toStdString();
      const EndmemberResult result = runEndmembers(options, feedback);
      QVERIFY(!result.resident);
      QVERIFY(positions(result) == positions(expected));
    }
    unmixFile(dir + "/pixel.tif", csv, dir + "/pixel_ab.tif", AbundanceMethod::Fcls,
              dir + "/pixel_rmse.tif");
    const testing::Cube expected = testing::readCube((dir + "/pixel_ab.tif").toStdString());
    const testing::Cube expectedRmse = testing::readCube((dir + "/pixel_rmse.tif").toStdString());
    for (const QString name : {"band.tif", "bsq.img"}) {
      unmixFile(dir + "/" + name, csv, dir + "/ab.tif", AbundanceMethod::Fcls, dir + "/rmse.tif",
                3);
      const testing::Cube written = testing::readCube((dir + "/ab.tif").toStdString());
      const testing::Cube rmse = testing::readCube((dir + "/rmse.tif").toStdString());
      QVERIFY(std::memcmp(written.values.data(), expected.values.data(),
                          expected.values.size() * sizeof(double)) == 0);
      QVERIFY(std::memcmp(rmse.values.data(), expectedRmse.values.data(),
                          expectedRmse.values.size() * sizeof(double)) == 0);
    }
  }

  // The endmember pixels as a GeoPackage: one point per endmember at the pixel's centre, in the
  // raster's CRS; the HTML report plots their spectra.
  void pointsLayer() {
    const QString dir = testing::tempDir();
    testing::Cube cube = testing::smoothScene(20, 18, 8, 3);
    testing::writeCube(cube, (dir + "/scene.tif").toStdString(), GDT_Float32);
    EndmemberOptions options;
    options.input = (dir + "/scene.tif").toStdString();
    options.output = (dir + "/em.csv").toStdString();
    options.pointsOutput = (dir + "/em.gpkg").toStdString();
    options.htmlReport = (dir + "/em.html").toStdString();
    options.search.count = 3;
    options.search.method = EndmemberMethod::Atgp;
    options.device = parseDevice("cpu");
    TestFeedback feedback;
    const EndmemberResult result = runEndmembers(options, feedback);
    QFile report(dir + "/em.html");
    QVERIFY(report.open(QIODevice::ReadOnly));
    const QString html = QString::fromUtf8(report.readAll());
    QVERIFY(html.contains("<svg") && html.contains("endmember_3") && html.contains("ATGP"));
    QCOMPARE(html.count("<image href='data:image/png;base64,"), 1);  // the input, marked
    QCOMPARE(html.count("<circle"), 2 * 3);
    GDALDatasetUniquePtr points(GDALDataset::Open(options.pointsOutput.c_str(), GDAL_OF_VECTOR));
    QVERIFY(points);
    OGRLayer* layer = points->GetLayer(0);
    QCOMPARE(layer->GetFeatureCount(), GIntBig{3});
    const std::array<double, 6>& g = result.input.geoTransform;
    int i = 0;
    for (auto& feature : *layer) {
      const Endmember& e = result.table.endmembers[i++];
      const OGRPoint* point = feature->GetGeometryRef()->toPoint();
      QCOMPARE(QString(feature->GetFieldAsString("id")), QString::fromStdString(e.id));
      QCOMPARE(point->getX(), g[0] + (e.col + 0.5) * g[1]);
      QCOMPARE(point->getY(), g[3] + (e.row + 0.5) * g[5]);
      // The spectrum, a field per band named as the table's column.
      QCOMPARE(feature->GetFieldCount(), 3 + 8);
      for (int b = 0; b < 8; ++b) {
        QCOMPARE(QString(feature->GetFieldDefnRef(3 + b)->GetNameRef()),
                 QString::fromStdString(result.table.bandNames[b]));
        QCOMPARE(feature->GetFieldAsDouble(3 + b), e.spectrum[b]);
      }
    }
  }

  // The search on another image of the same grid; the spectra from the input.
  void locationsFromAnotherImage() {
    const QString dir = testing::tempDir();
    testing::Cube cube = testing::smoothScene(20, 18, 8, 3);
    testing::writeCube(cube, (dir + "/scene.tif").toStdString(), GDT_Float32);
    testing::Cube other = testing::smoothScene(20, 18, 5, 9);
    testing::writeCube(other, (dir + "/other.tif").toStdString(), GDT_Float32);
    const EndmemberResult result = extract(dir + "/scene.tif", dir + "/em.csv",
                                           EndmemberMethod::Atgp, 3, 0, dir + "/other.tif");
    QVERIFY(positions(result) ==
            referenceAtgp(testing::readCube((dir + "/other.tif").toStdString()), 3));
    const testing::Cube input = testing::readCube((dir + "/scene.tif").toStdString());
    for (const Endmember& e : result.table.endmembers)
      for (int b = 0; b < 8; ++b) QCOMPARE(e.spectrum[b], input.at(e.row, e.col, b));
    testing::Cube small = testing::smoothScene(10, 18, 5, 9);
    testing::writeCube(small, (dir + "/small.tif").toStdString(), GDT_Float32);
    expectError(
        [&] {
          extract(dir + "/scene.tif", dir + "/bad.csv", EndmemberMethod::Atgp, 3, 0,
                  dir + "/small.tif");
        },
        dir + "/bad.csv", "LOCATIONS", "pixels");
  }

  void badInputs() {
    const QString dir = testing::tempDir();
    testing::Cube cube = testing::smoothScene(12, 10, 6, 3);
    testing::writeCube(cube, (dir + "/scene.tif").toStdString(), GDT_Float32);
    const QString out = dir + "/em.csv";
    expectError([&] { extract(dir + "/scene.tif", out, EndmemberMethod::Vca, 7); }, out, "COUNT",
                "6 bands");
    expectError([&] { extract(dir + "/scene.tif", out, EndmemberMethod::Vca, 40); }, out, "COUNT",
                "2 to 32");
    expectError([&] { extract(dir + "/scene.tif", out, EndmemberMethod::Atgp, 3, 0, {}, 4); }, out,
                "AVERAGE_WINDOW", "odd");
    // More endmembers than valid pixels.
    testing::Cube tiny = testing::smoothScene(1, 3, 6, 3);
    testing::writeCube(tiny, (dir + "/tiny.tif").toStdString(), GDT_Float32);
    expectError([&] { extract(dir + "/tiny.tif", out, EndmemberMethod::Nfindr, 4); }, out, "COUNT",
                "3 valid pixels");
    // N-FINDR keeps its P values per pixel within half the budget.
    testing::Cube wide = testing::correlatedCube(600, 500, 4, 3);
    testing::writeCube(wide, (dir + "/wide.tif").toStdString(), GDT_Float32);
    expectError(
        [&] {
          EndmemberOptions options =
              endmemberOptions(dir + "/wide.tif", out, EndmemberMethod::Nfindr, 4);
          options.ramBytes = 16ll << 20;
          TestFeedback feedback;
          runEndmembers(options, feedback);
        },
        out, "RAM_MB", "N-FINDR keeps 4 values per pixel");
    // Tables that do not fit the image, or are singular.
    Matrix spectra(size_t{3} * 6);
    for (size_t i = 0; i < spectra.size(); ++i)
      spectra[i] = 100 + static_cast<double>((i * 37) % 50);
    const QString output = dir + "/ab.tif";
    Matrix fewer(size_t{2} * 5, 1.0);
    for (size_t i = 0; i < fewer.size(); ++i) fewer[i] = 1 + static_cast<double>(i % 7);
    writeTable(tableOf(fewer, 2, 5), dir + "/five.csv");
    expectError(
        [&] { unmixFile(dir + "/scene.tif", dir + "/five.csv", output, AbundanceMethod::Fcls); },
        output, "ENDMEMBERS", "give 5 of the 6 selected bands (none for band 6");
    Matrix twice(spectra.begin(), spectra.begin() + 6);
    twice.insert(twice.end(), spectra.begin(), spectra.begin() + 6);
    writeTable(tableOf(twice, 2, 6), dir + "/twice.csv");
    expectError(
        [&] { unmixFile(dir + "/scene.tif", dir + "/twice.csv", output, AbundanceMethod::Fcls); },
        output, "ENDMEMBERS", "linearly dependent");
    QFile broken(dir + "/broken.csv");
    broken.open(QIODevice::WriteOnly);
    broken.write("band,a\n1,2\n");
    broken.close();
    expectError(
        [&] { unmixFile(dir + "/scene.tif", dir + "/broken.csv", output, AbundanceMethod::Fcls); },
        output, "ENDMEMBERS", "is not a table of spectra");
    // Several GPUs that this machine lacks (no GPU at all, or not GPUs 7 and 8).
    writeTable(tableOf(spectra, 3, 6), dir + "/three.csv");
    expectError(
        [&] {
          AbundanceOptions options;
          options.input = (dir + "/scene.tif").toStdString();
          options.endmembers = (dir + "/three.csv").toStdString();
          options.output = output.toStdString();
          options.device = parseDevice("gpu:7,8");
          TestFeedback feedback;
          runAbundances(options, feedback);
        },
        output, "DEVICE", "GPU");
  }
};

QTEST_GUILESS_MAIN(UnmixingTests)
#include "test_unmixing.moc"
