#pragma once
// Target and anomaly detection from a PCA fit of the covariance: the RX detector, the matched
// filter, ACE and CEM, each a projection of every pixel (projection/PcaKernels.h's Projection, with
// a DetectionScores for RX and ACE) built from the covariance's eigen-decomposition C = V Λ Vᵀ, so
// that C⁻¹ a = Σ_k v_k (v_kᵀ a) / λ_k. Constant bands (left out of the fit) are left out of every
// score; with `components` K only the first K principal components are (C⁻¹ in their subspace).
// The shrinkage adds ε = shrinkage × the mean band variance to every eigenvalue (C + εI).

#include "projection/PcaModel.h"
#include "spectra/Targets.h"

#include <optional>
#include <string>
#include <vector>

namespace hyperstream {

enum class DetectMethod {
  Rx,             // (x - m)ᵀ C⁻¹ (x - m)
  MatchedFilter,  // tᵀ C⁻¹ (x - m) / tᵀ C⁻¹ t, t = target - m
  Ace,            // (tᵀ C⁻¹ (x - m))² / ((tᵀ C⁻¹ t) (x - m)ᵀ C⁻¹ (x - m))
  Cem,  // tᵀ R⁻¹ x / tᵀ R⁻¹ t, R = (1/n) Σ x xᵀ the correlation matrix, t the target
};
// "rx", "mf", "ace", "cem"; parseDetectMethod throws Error("METHOD") for another name.
std::string detectMethodName(DetectMethod method);
DetectMethod parseDetectMethod(const std::string& name);

// Covariance eigenvalue spreads beyond this are singular to working precision: C⁻¹'s last digits
// would be noise (float64 keeps about 16). Refused (SHRINKAGE), image-wide and per column.
constexpr double kLargestCovarianceCondition = 1e13;

// A target nearer the background's mean than this many of its standard deviations (its
// Mahalanobis distance, in the components or bands scored) is the mean written with rounding: the
// matched filter divides by its squared distance, so that its scores would be the noise times
// 1e12 and more, and ACE's cosine would have no direction. Refused (TARGETS).
constexpr double kLeastTargetDistance = 1e-6;

struct DetectorOptions {
  DetectMethod method = DetectMethod::Rx;
  std::vector<Target> targets;  // none for RX
  // The first K principal components; 0: all (the detection job also takes kSignalSubspace, as
  // many as HySime's estimate, and kSceneMaterials, as many as the scene has materials).
  int components = 0;
  // ε = shrinkage × mean band variance; unset: the job's default (none, except per column:
  // each column's noise variance, see ColumnDetectJob.h).
  std::optional<double> shrinkage;
  // The targets are unit absorption spectra k (mf, ace): t = −m ⊙ k, the image's mean times the
  // absorption, so that the matched filter is the enhancement in k's units (mag1c's, EMIT's).
  bool absorption = false;
};

struct Detector {
  Projection projection;
  int components = 0;                  // principal components the scores use
  double epsilon = 0;                  // added to each eigenvalue
  std::vector<std::string> bandNames;  // one per output band
};

// The detector of a covariance fit (matrix Covariance, Transform Pca). Throws Error("TARGETS")
// for a target of another length or one the scores cannot tell from the background,
// Error("SHRINKAGE") for a covariance singular to working precision (fewer valid pixels than
// bands, or bands that are combinations of others) unless a shrinkage makes it regular.
Detector fitDetector(const PcaModel& model, const DetectorOptions& options);

}  // namespace hyperstream
