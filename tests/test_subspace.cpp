// The signal subspace (issue 37): HySime and the Harsanyi-Farrand-Chang virtual dimensionality
// from the moments, against float64 references written here (each band regressed on the others
// pixel by pixel through an orthonormal basis, eigenvectors by Jacobi, the test's threshold from
// erfc); HySime's count on generated scenes of 3-12 endmembers at 25-45 dB; and the defaults
// that use it (denoise and MNF) on the demo scene, removing the noise only.

#include "TestFeedback.h"
#include "TestSupport.h"
#include "pca/PcaJob.h"
#include "stats/SignalSubspace.h"
#include "synth/Synth.h"
#include "unmixing/EndmemberJob.h"

#include <QProcess>
#include <QtTest>

#include <array>
#include <cmath>
#include <random>

namespace {

using hyperstream::SignalSubspace;

struct ReferenceSubspace {
  int dimension = 0;
  std::vector<double> noiseVariance, dataPower, noisePower;
  std::array<int, 3> virtualDimensionality{};
};

using testing::bandRows;
using testing::dot;
using testing::regressionResidual;

// Eigenvalues descending and their vectors (columns of `vectors`, same order), by Jacobi.
std::vector<double> descending(const std::vector<double>& matrix, int n,
                               std::vector<double>& vectors) {
  std::vector<double> unsorted;
  const std::vector<double> values = testing::jacobi(matrix, n, unsorted);
  std::vector<int> order(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return values[a] > values[b]; });
  std::vector<double> sorted(static_cast<size_t>(n));
  vectors.assign(unsorted.size(), 0.0);
  for (int c = 0; c < n; ++c) {
    sorted[c] = values[order[c]];
    for (int r = 0; r < n; ++r) vectors[r * n + c] = unsorted[r * n + order[c]];
  }
  return sorted;
}

// z with P(N(0,1) > z) = rate, by bisection on erfc.
double upperQuantile(double rate) {
  double low = 0, high = 10;
  for (int i = 0; i < 200; ++i) {
    const double mid = (low + high) / 2;
    (0.5 * std::erfc(mid / std::sqrt(2.0)) > rate ? low : high) = mid;
  }
  return (low + high) / 2;
}

// HySime as the paper's code computes it, on the pixels: noise w_i = y_i less its regression on
// the other bands, x = y - w, Rx = x x^T / N, Rn = diag(w w^T / N) + trace(Rx) / L / 1e5, the
// eigenvectors of Rx kept where e^T Ry e > 2 e^T Rn e. HFC from the eigenvalues of Y Y^T / N and
// of the covariance (1 / N).
ReferenceSubspace referenceHysime(const testing::Cube& cube, const std::vector<int>& used) {
  const auto rows = bandRows(cube, used);
  const auto n = static_cast<int>(used.size());
  const auto pixels = static_cast<long double>(rows[0].size());
  ReferenceSubspace ref;
  std::vector<std::vector<long double>> signal(rows);
  for (int i = 0; i < n; ++i) {
    std::vector<const std::vector<long double>*> others;
    for (int j = 0; j < n; ++j)
      if (j != i) others.push_back(&rows[j]);
    const std::vector<long double> w = regressionResidual(rows[i], others);
    ref.noiseVariance.push_back(static_cast<double>(dot(w, w) / pixels));
    for (size_t k = 0; k < w.size(); ++k) signal[i][k] -= w[k];
  }
  std::vector<double> ry(static_cast<size_t>(n) * n), rx(ry.size()), k(ry.size());
  std::vector<long double> mean(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    long double sum = 0;
    for (long double v : rows[i]) sum += v;
    mean[i] = sum / pixels;
  }
  double trace = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      ry[i * n + j] = static_cast<double>(dot(rows[i], rows[j]) / pixels);
      rx[i * n + j] = static_cast<double>(dot(signal[i], signal[j]) / pixels);
      long double centred = 0;
      for (size_t p = 0; p < rows[i].size(); ++p)
        centred += (rows[i][p] - mean[i]) * (rows[j][p] - mean[j]);
      k[i * n + j] = static_cast<double>(centred / pixels);
      if (i == j) trace += rx[i * n + j];
    }
  std::vector<double> vectors;
  descending(rx, n, vectors);
  for (int c = 0; c < n; ++c) {
    double data = 0, noise = 0;
    for (int i = 0; i < n; ++i) {
      noise += vectors[i * n + c] * vectors[i * n + c] * (ref.noiseVariance[i] + trace / n / 1e5);
      for (int j = 0; j < n; ++j) data += vectors[i * n + c] * ry[i * n + j] * vectors[j * n + c];
    }
    ref.dataPower.push_back(data);
    ref.noisePower.push_back(noise);
    if (data > 2 * noise) ++ref.dimension;
  }
  std::vector<double> ignored;
  const std::vector<double> r = descending(ry, n, ignored);
  const std::vector<double> c = descending(k, n, ignored);
  for (size_t t = 0; t < 3; ++t) {
    const double z = upperQuantile(SignalSubspace::kFalseAlarmRates[t]);
    for (int l = 0; l < n; ++l)
      if (r[l] - c[l] >
          z * std::sqrt(2 * (r[l] * r[l] + c[l] * c[l]) / static_cast<double>(pixels)))
        ++ref.virtualDimensionality[t];
  }
  return ref;
}

hyperstream::Moments momentsOf(const testing::Cube& cube) {
  std::vector<unsigned char> valid(static_cast<size_t>(cube.pixels()));
  for (int64_t p = 0; p < cube.pixels(); ++p) valid[p] = testing::referenceValid(cube, p) ? 1 : 0;
  return testing::referenceMoments(cube.values, valid, cube.bands);
}

// p random smooth positive spectra mixed by Dirichlet abundances, with a noise whose standard
// deviation varies across the bands (5 to 40), as a sensor's does.
testing::Cube mixedScene(int64_t rows, int64_t cols, int bands, int p, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> spectra(static_cast<size_t>(p) * bands);
  for (int e = 0; e < p; ++e) {
    const double phase = 6.28 * unit(random), period = 3 + 20 * unit(random);
    for (int b = 0; b < bands; ++b)
      spectra[e * bands + b] = 2500 + 1500 * std::sin(phase + b / period) + 300 * unit(random);
  }
  testing::Cube cube;
  cube.rows = rows;
  cube.cols = cols;
  cube.bands = bands;
  cube.nodata.assign(bands, std::nan(""));
  for (int64_t px = 0; px < rows * cols; ++px) {
    std::vector<double> a(static_cast<size_t>(p));
    double total = 0;
    for (double& v : a) total += v = -std::log(unit(random) + 1e-12);
    for (int b = 0; b < bands; ++b) {
      double x = (5 + 35.0 * b / bands) * normal(random);
      for (int e = 0; e < p; ++e) x += a[e] / total * spectra[e * bands + b];
      cube.values.push_back(x);
    }
  }
  return cube;
}

std::vector<int> allBands(int bands) {
  std::vector<int> used(static_cast<size_t>(bands));
  for (int b = 0; b < bands; ++b) used[b] = b;
  return used;
}

// The bands of `moments` whose values vary (the fit's "used" bands).
std::vector<int> varyingBands(const hyperstream::Moments& moments) {
  std::vector<int> used;
  for (int b = 0; b < moments.bands; ++b)
    if (moments.maximum[b] > moments.minimum[b]) used.push_back(b);
  return used;
}

// The RMS of what a rebuilt image changed over the valid pixels of `before`, every band.
double rmsChange(const testing::Cube& before, const QString& rebuilt) {
  const testing::Cube after = testing::readCube(rebuilt.toStdString());
  double sum = 0;
  int64_t count = 0;
  for (int64_t p = 0; p < before.pixels(); ++p) {
    if (!testing::referenceValid(before, p)) continue;
    for (int b = 0; b < before.bands; ++b) {
      const double d = after.values[p * before.bands + b] - before.values[p * before.bands + b];
      sum += d * d;
      ++count;
    }
  }
  return std::sqrt(sum / static_cast<double>(count));
}

struct Run {
  int exitCode = -1;
  QString out, err;
};

Run cli(const QStringList& arguments) {
  QProcess process;
  process.start(QStringLiteral(HYPERSTREAM_CLI), arguments);
  process.waitForFinished(300000);
  return {process.exitCode(), process.readAllStandardOutput(), process.readAllStandardError()};
}

}  // namespace

class SubspaceTests : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { GDALAllRegister(); }

  // The estimate from the moments equals HySime computed on the pixels.
  void matchesPixelReference() {
    for (uint64_t seed : {11u, 12u}) {
      const testing::Cube cube = mixedScene(40, 50, 30, 4, seed);
      const std::vector<int> used = allBands(cube.bands);
      const SignalSubspace ours = hyperstream::estimateSignalSubspace(momentsOf(cube), used);
      const ReferenceSubspace ref = referenceHysime(cube, used);
      QCOMPARE(ours.dimension, ref.dimension);
      QCOMPARE(ours.dimension, 4);
      for (size_t b = 0; b < used.size(); ++b)
        QVERIFY2(
            std::abs(ours.noiseVariance[b] - ref.noiseVariance[b]) <= 1e-6 * ref.noiseVariance[b],
            qPrintable(QString("band %1: %2 vs %3")
                           .arg(b)
                           .arg(ours.noiseVariance[b], 0, 'g', 12)
                           .arg(ref.noiseVariance[b], 0, 'g', 12)));
      // Along the signal's eigenvectors (distinct eigenvalues; the noise's are near-equal and
      // their vectors any rotation of one another).
      for (int c = 0; c < ours.dimension; ++c) {
        QVERIFY(std::abs(ours.dataPower[c] - ref.dataPower[c]) <= 1e-6 * ref.dataPower[c]);
        QVERIFY(std::abs(ours.noisePower[c] - ref.noisePower[c]) <= 1e-6 * ref.noisePower[c]);
      }
      for (int t = 0; t < 3; ++t)
        QCOMPARE(ours.virtualDimensionality[t], ref.virtualDimensionality[t]);
      qInfo("seed %d: HySime %d, VD (HFC) %d / %d / %d", static_cast<int>(seed), ours.dimension,
            ours.virtualDimensionality[0], ours.virtualDimensionality[1],
            ours.virtualDimensionality[2]);
    }
  }

  // The demo generator's scenes (224 bands, smooth abundances, shading, dead bands, a nodata
  // border) with 3-12 endmembers at 25-45 dB: HySime's count, from a PCA job's moments, against
  // the truth. Where an endmember's share of the scene's variance falls below the noise, the
  // signal subspace has fewer dimensions than the scene has endmembers: HySime must be right at
  // 35 dB and above, and is logged at all; the endmembers' count as often as HySime.
  // One row per SNR, ten scenes each (a row's time stays well within Qt Test's five minutes a
  // function on a loaded machine).
  void countsEndmembers_data() {
    QTest::addColumn<double>("snr");
    for (double snr : {25.0, 30.0, 35.0, 40.0, 45.0})
      QTest::newRow(qPrintable(QString("%1 dB").arg(snr))) << snr;
  }

  void countsEndmembers() {
    QFETCH(double, snr);
    const QString dir = testing::tempDir();
    int hits = 0, materialHits = 0, scenes = 0;
    QStringList misses, materialMisses;
    for (int p = 3; p <= 12; ++p) {
      hyperstream::SynthOptions options;
      options.output = (dir + "/scene.tif").toStdString();
      options.rows = options.cols = 100;
      options.endmembers = p;
      options.snrDb = snr;
      options.seed = 100 + p;
      TestFeedback feedback;
      hyperstream::synthesizeScene(options, feedback);
      hyperstream::PcaOptions pca;
      pca.input = options.output;
      pca.output = (dir + "/components.tif").toStdString();
      pca.components = hyperstream::kSignalSubspace;
      const hyperstream::PcaResult result = hyperstream::runPca(pca, feedback);
      QCOMPARE(result.components, result.subspace->dimension);
      ++scenes;
      if (result.subspace->dimension == p)
        ++hits;
      else
        misses << QString("%1 endmembers: %2").arg(p).arg(result.subspace->dimension);
      // The endmembers' default count, as an analyst runs it.
      hyperstream::EndmemberOptions endmembers;
      endmembers.input = options.output;
      endmembers.output = (dir + "/endmembers.csv").toStdString();
      endmembers.search.method = hyperstream::EndmemberMethod::Nfindr;
      endmembers.search.count = hyperstream::kCountFromScene;
      const int counted = static_cast<int>(
          hyperstream::runEndmembers(endmembers, feedback).table.endmembers.size());
      if (counted == p)
        ++materialHits;
      else
        materialMisses << QString("%1 endmembers: %2").arg(p).arg(counted);
    }
    qInfo(
        "%g dB: HySime right on %d, the endmembers' count on %d of %d scenes (3-12 endmembers); "
        "HySime missed %s; the count missed %s",
        snr, hits, materialHits, scenes, qPrintable(misses.join(", ")),
        qPrintable(materialMisses.join(", ")));
    if (snr >= 35) QVERIFY2(hits * 10 >= scenes * 9, qPrintable(misses.join("; ")));
    if (snr >= 35) QVERIFY2(materialHits * 10 >= scenes * 9, qPrintable(materialMisses.join("; ")));
    QVERIFY2(materialHits >= hits, qPrintable(materialMisses.join("; ")));
  }

  // The endmembers' default count on the real scenes, against the materials they are unmixed
  // into (Jasper Ridge: road, soil, water, tree; Samson: soil, tree, water; Moffett: water, soil,
  // vegetation), within one; HySime's signal subspace holds 15-43 dimensions there.
  void realScenesCountMaterials() {
    const QString data = testing::sharedDataDir();
    if (data.isEmpty()) QSKIP("../shared/data is absent: the real-scene test needs its cubes");
    const QString dir = testing::tempDir();
    const std::pair<const char*, int> scenes[] = {{"jasper_ridge_100x100x198_uint16.tif", 4},
                                                  {"jasper_ridge_nodata65535.tif", 4},
                                                  {"samson_95x95x156_float64.tif", 3},
                                                  {"moffett_50x50x189_float64.tif", 3}};
    for (const auto& [file, materials] : scenes) {
      for (const char* method : {"nfindr", "vca"}) {
        const Run run = cli({"endmembers", data + "/" + file, dir + "/em.csv", "--count", "auto",
                             "--method", method});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        const QRegularExpressionMatch counted =
            QRegularExpression("Materials: (\\d+), ").match(run.err);
        QVERIFY2(counted.hasMatch(), qPrintable(run.err));
        const int count = counted.captured(1).toInt();
        qInfo("%s: %d endmembers (%d materials)", file, count, materials);
        QVERIFY2(std::abs(count - materials) <= 1, qPrintable(run.err));
        QFile table(dir + "/em.csv");
        QVERIFY(table.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromUtf8(table.readAll()).trimmed().split('\n').size(), count + 1);
      }
    }
  }

  // --count auto: the endmembers of --count 5 on a five-endmember scene, by each method (VCA
  // and N-FINDR reuse the moments pass and its sample; ATGP makes one more).
  void endmemberCountAuto() {
    const QString dir = testing::tempDir();
    const QString scene = dir + "/scene.tif";
    QCOMPARE(cli({"synth", scene, "--rows", "120", "--cols", "120", "--quiet"}).exitCode, 0);
    for (const char* method : {"vca", "nfindr", "atgp"}) {
      const Run automatic =
          cli({"endmembers", scene, dir + "/auto.csv", "--count", "auto", "--method", method});
      QVERIFY2(automatic.exitCode == 0, qPrintable(automatic.err));
      QVERIFY2(automatic.err.contains("Materials: 5, the signal subspace's 5 dimensions"),
               qPrintable(automatic.err));
      const Run five = cli(
          {"endmembers", scene, dir + "/five.csv", "--count", "5", "--method", method, "--quiet"});
      QCOMPARE(five.exitCode, 0);
      QFile a(dir + "/auto.csv"), b(dir + "/five.csv");
      QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
      QCOMPARE(a.readAll(), b.readAll());
    }
  }

  // Denoise with its defaults keeps the signal subspace: on the demo scene it changes each
  // pixel by about the noise (20 DN), no more; MNF's default keeps the five endmembers' worth.
  void defaultsRemoveNoiseOnly() {
    const QString dir = testing::tempDir();
    const QString scene = dir + "/demo.tif", denoised = dir + "/denoised.tif";
    QCOMPARE(cli({"synth", scene, "--quiet"}).exitCode, 0);
    const Run run = cli({"denoise", scene, denoised, "--html", dir + "/denoise.html"});
    QVERIFY2(run.exitCode == 0, qPrintable(run.err));
    QVERIFY2(run.out.contains("denoised with 5 PCA component(s) (the signal subspace, HySime)"),
             qPrintable(run.out));
    QVERIFY2(run.err.contains("Signal subspace: 5 dimension(s) by HySime"), qPrintable(run.err));
    const testing::Cube before = testing::readCube(scene.toStdString());
    const double rms = rmsChange(before, denoised);
    QVERIFY(rms <= 1.1 * 20.0);
    QVERIFY(rms >= 0.8 * 20.0);  // the noise went
    // The report: the input and the denoised image side by side, and the RMS change the left-out
    // eigenvalues make, as measured.
    QFile report(dir + "/denoise.html");
    QVERIFY(report.open(QIODevice::ReadOnly));
    const QString page = QString::fromUtf8(report.readAll());
    QVERIFY(page.contains("Before and after") && page.count("<img") == 3);
    QVERIFY(page.contains("Removed: RMS of input − denoised over 16 bands"));
    const QRegularExpressionMatch stated =
        QRegularExpression("an RMS change of ([0-9.]+) per band").match(page);
    QVERIFY(stated.hasMatch());
    QVERIFY2(std::abs(stated.captured(1).toDouble() - rms) < 0.03 * rms,
             qPrintable(stated.captured(0)));
    // The former default, 99 % of the variance, took signal too.
    QCOMPARE(cli({"denoise", scene, dir + "/99.tif", "--variance", "99", "--quiet"}).exitCode, 0);
    const double rms99 = rmsChange(before, dir + "/99.tif");
    qInfo(
        "denoise: RMS change %.2f DN with the defaults, %.2f DN with 99 %% of the variance, for "
        "a noise of 20 DN",
        rms, rms99);
    QVERIFY(rms99 > 2 * 20.0);
    const Run mnf = cli({"mnf", scene, dir + "/mnf.tif"});
    QVERIFY2(mnf.exitCode == 0, qPrintable(mnf.err));
    QVERIFY2(mnf.out.startsWith("5 component(s) (the signal subspace, HySime)"),
             qPrintable(mnf.out));
    // PCA keeps the seeds' rule by default and says the estimate.
    const Run pca = cli({"pca", scene, dir + "/pca.tif"});
    QVERIFY2(pca.out.startsWith("2 component(s), 99.17 % of the variance"), qPrintable(pca.out));
    QVERIFY2(pca.err.contains("Signal subspace: 5"), qPrintable(pca.err));
    // A saved transform has its own count.
    const Run apply =
        cli({"apply", dir + "/none.json", scene, dir + "/a.tif", "--components", "auto"});
    QCOMPARE(apply.exitCode, 1);
    QVERIFY2(apply.err.contains("[COMPONENTS]") && apply.err.contains("'auto'"),
             qPrintable(apply.err));
  }
};

QTEST_GUILESS_MAIN(SubspaceTests)
#include "test_subspace.moc"
