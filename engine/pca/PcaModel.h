#pragma once
// The PCA fit: from merged moments to eigenvalues, loadings and the projection that applies them.

#include "pca/Moments.h"
#include "pca/PcaKernels.h"

#include <string>
#include <vector>

namespace hyperstream {

enum class MatrixType { Covariance, Correlation };
std::string matrixTypeName(MatrixType type);

struct PcaModel {
  MatrixType matrix = MatrixType::Covariance;
  int bands = 0;  // bands that went into the fit (selected bands)
  int64_t validPixels = 0;
  std::vector<double> mean;    // per band
  std::vector<double> stddev;  // per band (sample, N-1)
  std::vector<double> minimum, maximum;
  std::vector<int> constantBands;   // 0-based indices into the selected bands; left out of the fit
  std::vector<double> eigenvalues;  // descending, one per non-constant band
  // bands x eigenvalues.size(), row-major: column k holds component k's loadings (zero for
  // constant bands), unit length, largest-magnitude loading positive.
  std::vector<double> eigenvectors;

  int componentCount() const { return static_cast<int>(eigenvalues.size()); }
  double explainedPercent(int component) const;
  double cumulativePercent(int component) const;
  // Smallest number of components whose cumulative explained variance reaches `percent`.
  int componentsForVariance(double percent) const;
  // The transform to the first `components` components: centre, divide by the standard deviation
  // for a correlation fit, multiply by the loadings.
  Projection projection(int components) const;
  // The largest |value| component `component` can take over the valid pixels (the sum of its
  // weights' magnitudes times each band's largest distance from its mean): at least the true one.
  double componentBound(int component) const;
};

// Fits the model; throws Error when there is nothing to fit (no valid pixel, every band
// constant). Warnings (constant bands) go into `warnings`.
PcaModel fitPca(const Moments& moments, MatrixType matrix, std::vector<std::string>& warnings);

}  // namespace hyperstream
