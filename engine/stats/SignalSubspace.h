#pragma once
// How many dimensions of an image hold signal, estimated from its moments alone (no pixel is
// read again):
// - HySime (Bioucas-Dias & Nascimento, "Hyperspectral subspace identification", IEEE TGRS 2008):
//   each band's noise is what the regression of the band on all the others leaves; the signal
//   subspace is spanned by the eigenvectors of the signal correlation matrix whose projection
//   error is lowered by keeping them (power of the data along them above twice the noise's).
// - The Harsanyi-Farrand-Chang virtual dimensionality (Chang & Du 2004): the eigenvalues of the
//   correlation matrix that exceed those of the covariance matrix by more than a Neyman-Pearson
//   test at false-alarm rate P_F allows.
// Both work on the data as the papers do: correlation matrices of the uncentred pixels, so the
// mean is one of the dimensions (a scene of p endmembers has a p-dimensional signal subspace).

#include "stats/Moments.h"

#include <array>
#include <vector>

namespace hyperstream {

struct SignalSubspace {
  int dimension = 0;  // HySime's
  // Per band of `used`: the variance of its noise (the residual of its regression on the other
  // bands, as HySime's noise estimate).
  std::vector<double> noiseVariance;
  // Along each eigenvector of the signal correlation matrix (eigenvalues descending): the
  // data's power and the noise's; HySime keeps those where data > 2 noise.
  std::vector<double> dataPower, noisePower;
  // Virtual dimensionality (HFC) at the false-alarm rates kFalseAlarmRates.
  static constexpr std::array<double, 3> kFalseAlarmRates = {1e-3, 1e-4, 1e-5};
  std::array<int, 3> virtualDimensionality{};
};

// The estimate over the bands `used` (0-based indices into the moments' bands: the non-constant
// ones). Throws Error("INPUT") when the bands' correlation matrix is singular (a band that is a
// combination of others, exactly).
SignalSubspace estimateSignalSubspace(const Moments& moments, const std::vector<int>& used);

}  // namespace hyperstream
