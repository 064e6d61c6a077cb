#pragma once
// The PCA fit: from merged moments to eigenvalues, loadings and the projection that applies them.

#include "projection/PcaKernels.h"
#include "stats/Moments.h"

#include <algorithm>
#include <string>
#include <vector>

namespace hyperstream {

enum class MatrixType { Covariance, Correlation };
std::string matrixTypeName(MatrixType type);

// Which fit made the model: PCA (eigenvalues are variances) or MNF (eigenvalues are 1 + SNR, the
// vectors N-orthonormal for the noise covariance N).
enum class Transform { Pca, Mnf };

struct PcaModel {
  Transform transform = Transform::Pca;
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
  std::vector<double> noiseStddev;  // MNF: per band, of the noise estimate (N's diagonal)
  // MNF: bands x eigenvalues.size(), row-major: column k is what component k adds back to the
  // bands (N w_k). PCA's are its loadings (times the standard deviations for a correlation fit).
  std::vector<double> inverseLoadings;
  // Names the fit (fitIdentity), so that components and statistics can be told to belong
  // together; empty for a model read from an older run's statistics.
  std::string id;

  int componentCount() const { return static_cast<int>(eigenvalues.size()); }
  // What a component explains: its variance (PCA) or its SNR, eigenvalue - 1 (MNF; below 0 for
  // components noisier than the noise estimate).
  double signal(int component) const {
    return eigenvalues[component] - (transform == Transform::Mnf ? 1.0 : 0.0);
  }
  // Its share in the explained percentages: the signal, none when below 0.
  double share(int component) const { return std::max(0.0, signal(component)); }
  double explainedPercent(int component) const;
  double cumulativePercent(int component) const;
  // Smallest number of components whose cumulative explained variance reaches `percent`.
  int componentsForVariance(double percent) const;
  // The transform to the first `components` components: centre, divide by the standard deviation
  // for a correlation fit, multiply by the loadings.
  Projection projection(int components) const;
  // The projection to the first `components` components and back: each pixel rebuilt from them
  // (mean + the components times their inverse loadings), as denoising does.
  Projection rebuilding(int components) const;
  // The inverse loadings of the first `components` components: components x bands, row-major.
  // Throws Error("STATS") for an MNF read from statistics saved without them.
  std::vector<double> restore(int components) const;
  // The largest |value| component `component` can take over the valid pixels (the sum of its
  // weights' magnitudes times each band's largest distance from its mean): at least the true one;
  // 0 when the ranges are unknown (a saved model).
  double componentBound(int component) const;
};

// A hash of what makes the transform (its kind, matrix, means, scaling and vectors): 16 hex digits.
std::string fitIdentity(const PcaModel& model);

// Fits the model; throws Error when there is nothing to fit (no valid pixel, every band
// constant). Warnings (constant bands) go into `warnings`.
PcaModel fitPca(const Moments& moments, MatrixType matrix, std::vector<std::string>& warnings);

// The steps of a fit, for the fits of other transforms. The model's bands from their moments:
// counts, means, ranges, standard deviations, the constant bands left out (a warning) and the
// others' indices in `used`; throws Error when there is nothing to fit.
PcaModel describeBands(const Moments& moments, MatrixType matrix, std::vector<int>& used,
                       std::vector<std::string>& warnings);
// The used bands' rows and columns of a bands x bands matrix, each divided by scale[row] *
// scale[column] when `scale` is given.
std::vector<double> usedMatrix(const std::vector<double>& matrix, int bands,
                               const std::vector<int>& used, const std::vector<double>& scale);
// Components from LAPACK's ascending eigenpairs of the used bands' matrix (vectors m x m,
// row-major, column k for value k): descending, the largest-magnitude loading positive, loadings
// expanded to every band (zero for constant bands).
void setComponents(PcaModel& model, const std::vector<int>& used, const std::vector<double>& values,
                   const std::vector<double>& vectors);

}  // namespace hyperstream
