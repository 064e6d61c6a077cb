#include "projection/MnfFit.h"

#include "core/BlasThreads.h"
#include "core/Error.h"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>

namespace hyperstream {

namespace {

// N is not positive definite from used band k on: the band whose noise matches it most closely
// among those before it, for the message.
[[noreturn]] void throwSingularNoise(const std::vector<double>& n, const std::vector<int>& used,
                                     int k) {
  const size_t m = used.size();
  auto at = [&](size_t i, size_t j) { return n[i * m + j]; };
  const size_t bad = static_cast<size_t>(k);
  size_t closest = bad;
  double best = -1;
  for (size_t j = 0; j < bad; ++j) {
    const double scale = std::sqrt(at(bad, bad) * at(j, j));
    const double correlation = scale > 0 ? std::abs(at(bad, j)) / scale : 0.0;
    if (correlation > best) best = correlation, closest = j;
  }
  std::string message = "the noise covariance is singular: the noise of selected band number " +
                        std::to_string(used[bad] + 1);
  if (closest != bad && best > 0.999999)
    message += " is that of band number " + std::to_string(used[closest] + 1) +
               " (identical or proportional bands)";
  else
    message += " is a combination of the bands before it";
  throw Error("BANDS", message + ": leave one of them out");
}

// The first used band whose noise the bands before it explain all but a round-off of, or -1:
// Cholesky's pivot L_kk^2 is the part of band k's noise variance not explained by the bands before
// it. dsygvd only fails on a pivot that comes out non-positive, and whether round-off leaves an
// exactly singular N a tiny positive pivot depends on the BLAS kernels; a tiny pivot would give
// eigenvalues of round-off.
int firstDependentBand(std::vector<double> n, int m) {
  std::vector<double> diagonal(m);
  for (int k = 0; k < m; ++k) diagonal[k] = n[static_cast<size_t>(k) * m + k];
  const lapack_int info = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', m, n.data(), m);
  if (info > 0) return static_cast<int>(info) - 1;
  constexpr double kUnexplained = 1e-10;
  for (int k = 0; k < m; ++k) {
    const double pivot = n[static_cast<size_t>(k) * m + k];
    if (!(pivot * pivot > kUnexplained * diagonal[k])) return k;
  }
  return -1;
}

// N W: since W^T N W = I, the inverse of y = W^T (x - mean) is x - mean = N W y. Constant bands'
// rows stay zero (they rebuild to their mean).
void setInverseLoadings(PcaModel& model, const std::vector<double>& noiseCovariance) {
  const int bands = model.bands, all = model.componentCount();
  model.inverseLoadings.assign(static_cast<size_t>(bands) * all, 0.0);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bands, all, bands, 1.0,
              noiseCovariance.data(), bands, model.eigenvectors.data(), all, 0.0,
              model.inverseLoadings.data(), all);
  for (int b : model.constantBands)
    std::fill_n(model.inverseLoadings.begin() + static_cast<int64_t>(b) * all, all, 0.0);
}

}  // namespace

PcaModel fitMnf(const Moments& signal, const Moments& noise, std::vector<std::string>& warnings) {
  std::vector<int> used;
  PcaModel model = describeBands(signal, MatrixType::Covariance, used, warnings);
  model.transform = Transform::Mnf;
  if (noise.count < 2)
    throw Error("NOISE_DIRECTION",
                "fewer than two valid pixel pairs in that direction: no noise "
                "estimate (choose another direction)");
  const int bands = signal.bands;
  const BlasThreadsHere threads(fitBlasThreads(bands));
  std::vector<double> noiseCovariance = noise.covariance();
  for (double& value : noiseCovariance) value *= 0.5;
  for (int b = 0; b < bands; ++b)
    model.noiseStddev.push_back(
        std::sqrt(std::max(0.0, noiseCovariance[static_cast<size_t>(b) * bands + b])));
  const int m = static_cast<int>(used.size());
  std::vector<double> s = usedMatrix(signal.covariance(), bands, used, {});
  std::vector<double> n = usedMatrix(noiseCovariance, bands, used, {});
  if (const int dependent = firstDependentBand(n, m); dependent >= 0)
    throwSingularNoise(n, used, dependent);
  const std::vector<double> noiseKept = n;
  std::vector<double> values(m);
  const lapack_int info =
      LAPACKE_dsygvd(LAPACK_ROW_MAJOR, 1, 'V', 'U', m, s.data(), m, n.data(), m, values.data());
  if (info > m) throwSingularNoise(noiseKept, used, static_cast<int>(info - m) - 1);
  if (info != 0)
    throw Error("INPUT",
                "the eigen-decomposition of the signal against the noise did not converge: the "
                "bands' values may span too many orders of magnitude; rescale the bands or "
                "leave the extreme ones out");
  setComponents(model, used, values, s);
  setInverseLoadings(model, noiseCovariance);
  return model;
}

}  // namespace hyperstream
