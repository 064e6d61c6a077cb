#include "stats/SignalSubspace.h"

#include "core/Error.h"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace hyperstream {

namespace {

// Eigenvalues of the symmetric n x n `matrix` (row-major), descending; with `vectors`, the
// eigenvectors too, as its columns in the same order.
std::vector<double> eigenDescending(std::vector<double> matrix, int n,
                                    std::vector<double>* vectors) {
  std::vector<double> values(static_cast<size_t>(n));
  if (LAPACKE_dsyevd(LAPACK_ROW_MAJOR, vectors ? 'V' : 'N', 'U', n, matrix.data(), n,
                     values.data()) != 0)
    throw Error("INPUT", "the eigen-decomposition of the bands' correlation did not converge");
  std::reverse(values.begin(), values.end());
  if (vectors) {
    vectors->resize(matrix.size());
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < n; ++c) (*vectors)[r * n + c] = matrix[r * n + (n - 1 - c)];
  }
  return values;
}

// The inverse of the symmetric positive definite `matrix`, through its Cholesky factor, scaled
// to a unit diagonal first (the uncentred correlation of DN has entries of 1e8 beside a noise of
// 1). Throws Error("INPUT") where it is singular.
std::vector<double> inverse(const std::vector<double>& matrix, int n) {
  std::vector<double> scale(static_cast<size_t>(n)), a(matrix.size());
  for (int i = 0; i < n; ++i) scale[i] = std::sqrt(matrix[i * n + i]);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) a[i * n + j] = matrix[i * n + j] / (scale[i] * scale[j]);
  if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', n, a.data(), n) != 0 ||
      LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'U', n, a.data(), n) != 0)
    throw Error("INPUT",
                "the selected bands' correlation matrix is singular (a band is a combination of "
                "others): the signal subspace cannot be estimated");
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const double value = j >= i ? a[i * n + j] : a[j * n + i];
      a[i * n + j] = value / (scale[i] * scale[j]);
    }
  for (int i = 1; i < n; ++i)
    for (int j = 0; j < i; ++j) a[i * n + j] = a[j * n + i];
  return a;
}

// Phi^-1(1 - P_F) for SignalSubspace::kFalseAlarmRates.
constexpr std::array<double, 3> kThresholds = {3.090232306167813, 3.719016485455709,
                                               4.264890793922602};

// HFC: the eigenvalues of the correlation matrix beyond those of the covariance matrix by more
// than the test's threshold, sqrt(2 (r^2 + k^2) / N) standard deviations apart under H0.
std::array<int, 3> virtualDimensionality(const std::vector<double>& correlation,
                                         const std::vector<double>& covariance, int n,
                                         int64_t pixels) {
  const std::vector<double> r = eigenDescending(correlation, n, nullptr);
  const std::vector<double> k = eigenDescending(covariance, n, nullptr);
  std::array<int, 3> counts{};
  for (size_t t = 0; t < kThresholds.size(); ++t)
    for (int l = 0; l < n; ++l) {
      const double deviation = std::sqrt(2.0 * (r[l] * r[l] + k[l] * k[l]) / pixels);
      if (r[l] - k[l] > kThresholds[t] * deviation) ++counts[t];
    }
  return counts;
}

}  // namespace

SignalSubspace estimateSignalSubspace(const Moments& moments, const std::vector<int>& used) {
  const auto n = static_cast<int>(used.size());
  const int64_t pixels = moments.count;
  if (n < 2 || pixels < 2)
    throw Error("INPUT", "the signal subspace needs at least two non-constant bands and pixels");
  // Ry = Y Y^T / N from the centred moments; K = the covariance with 1 / N, as HFC takes it.
  std::vector<double> ry(static_cast<size_t>(n) * n), k(ry.size());
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const double comoment =
          moments.comoment[static_cast<size_t>(used[i]) * moments.bands + used[j]];
      k[i * n + j] = comoment / static_cast<double>(pixels);
      ry[i * n + j] = k[i * n + j] + moments.mean[used[i]] * moments.mean[used[j]];
    }
  // The regression of band i on the others leaves the residual w = (D^-1 Q y)_i, Q = Ry^-1,
  // D = diag(Q), with variance 1 / Q_ii; the signal x = y - w then has the correlation
  // Rx = Ry - 2 D^-1 + D^-1 Q D^-1 (Q Ry = I). Exactly HySime's estimates, without the pixels.
  const std::vector<double> q = inverse(ry, n);
  SignalSubspace subspace;
  subspace.noiseVariance.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) subspace.noiseVariance[i] = 1.0 / q[i * n + i];
  std::vector<double> rx(ry.size());
  double trace = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      rx[i * n + j] =
          ry[i * n + j] + q[i * n + j] * subspace.noiseVariance[i] * subspace.noiseVariance[j];
      if (i == j) {
        rx[i * n + j] -= 2.0 * subspace.noiseVariance[i];
        trace += rx[i * n + j];
      }
    }
  // HySime's noise correlation: diagonal, with its small ridge (trace(Rx) / L / 1e5).
  std::vector<double> noise(subspace.noiseVariance);
  for (double& value : noise) value += trace / n / 1e5;
  std::vector<double> vectors;
  eigenDescending(rx, n, &vectors);
  // Along eigenvector c: the data's power e_c^T Ry e_c (Ry E in one product), the noise's.
  std::vector<double> projected(vectors.size());
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, ry.data(), n, vectors.data(),
              n, 0.0, projected.data(), n);
  subspace.dataPower.assign(static_cast<size_t>(n), 0.0);
  subspace.noisePower.assign(static_cast<size_t>(n), 0.0);
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < n; ++c) {
      const double ei = vectors[i * n + c];
      subspace.dataPower[c] += ei * projected[i * n + c];
      subspace.noisePower[c] += ei * ei * noise[i];
    }
  for (int c = 0; c < n; ++c)
    if (subspace.dataPower[c] > 2.0 * subspace.noisePower[c]) ++subspace.dimension;
  subspace.virtualDimensionality = virtualDimensionality(ry, k, n, pixels);
  return subspace;
}

}  // namespace hyperstream
