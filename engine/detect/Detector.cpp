#include "detect/Detector.h"

#include "core/BlasThreads.h"
#include "core/Error.h"

#include <QString>

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hyperstream {

namespace {

// C⁻¹ (or R⁻¹ through it) applied to vectors, in the first K components of the fit.
class InverseCovariance {
 public:
  InverseCovariance(const PcaModel& model, int components, double epsilon, double scale)
      : model_(model), components_(components), all_(model.componentCount()) {
    for (int k = 0; k < components_; ++k)
      variance_.push_back(model.eigenvalues[k] * scale + epsilon);
  }
  double variance(int k) const { return variance_[k]; }
  double loading(int b, int k) const {
    return model_.eigenvectors[static_cast<size_t>(b) * all_ + k];
  }
  // C⁻¹ a = Σ_k v_k (v_kᵀ a) / λ_k.
  std::vector<double> apply(const std::vector<double>& a) const {
    std::vector<double> result(a.size(), 0.0);
    for (int k = 0; k < components_; ++k) {
      double along = 0;
      for (size_t b = 0; b < a.size(); ++b) along += loading(static_cast<int>(b), k) * a[b];
      const double weight = along / variance_[k];
      for (size_t b = 0; b < a.size(); ++b) result[b] += loading(static_cast<int>(b), k) * weight;
    }
    return result;
  }

 private:
  const PcaModel& model_;
  int components_, all_;
  std::vector<double> variance_;
};

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

std::vector<double> minus(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> result(a.size());
  for (size_t i = 0; i < a.size(); ++i) result[i] = a[i] - b[i];
  return result;
}

// −m ⊙ k: what an absorption k (per unit of enhancement) takes from the mean spectrum.
std::vector<double> absorbed(const std::vector<double>& mean, const Target& target) {
  std::vector<double> result(mean.size());
  for (size_t b = 0; b < mean.size(); ++b) result[b] = -mean[b] * target.spectrum[b];
  return result;
}

void checkTargets(const PcaModel& model, const DetectorOptions& options) {
  if (options.method == DetectMethod::Rx) return;
  if (options.absorption && options.method == DetectMethod::Cem)
    throw Error("TARGET_MODE", "absorption targets are for mf and ace (CEM takes spectra)");
  if (options.targets.empty()) throw Error("TARGETS", "no target spectrum given");
  for (const Target& target : options.targets)
    if (target.spectrum.size() != static_cast<size_t>(model.bands))
      throw Error("TARGETS", QString("target '%1' has %2 values, but %3 bands are selected")
                                 .arg(QString::fromStdString(target.name))
                                 .arg(target.spectrum.size())
                                 .arg(model.bands)
                                 .toStdString());
}

// Column `column` of the row-major bands x components weights.
void setColumn(Projection& projection, int column, const std::vector<double>& values) {
  for (int b = 0; b < projection.bands; ++b)
    projection.weights[static_cast<size_t>(b) * projection.components + column] = values[b];
}

// The first K components whitened: y_k = v_kᵀ (x - m) / sqrt(λ_k).
void setWhitened(Projection& projection, const InverseCovariance& inverse, int components) {
  for (int k = 0; k < components; ++k) {
    const double scale = 1.0 / std::sqrt(inverse.variance(k));
    for (int b = 0; b < projection.bands; ++b)
      projection.weights[static_cast<size_t>(b) * projection.components + k] =
          inverse.loading(b, k) * scale;
  }
}

// All components whitened by a triangular factor instead: C + εI = U Uᵀ over the bands the fit
// uses, U upper triangular (the Cholesky factor of the bands in reverse order, reversed), and
// y = U⁻¹(x − m), so that |y|² is the same Mahalanobis distance while component i weighs only
// the bands from the i-th on: the CPU's projection skips the zeros, half the work of a dense
// whitening. False where the factor cannot be taken (then the eigenvectors whiten).
bool setTriangularWhitened(Projection& projection, const InverseCovariance& inverse,
                           int components) {
  std::vector<int> used;  // the bands with a loading: those the fit kept (not constant)
  for (int b = 0; b < projection.bands; ++b)
    for (int k = 0; k < components; ++k)
      if (inverse.loading(b, k) != 0) {
        used.push_back(b);
        break;
      }
  const auto m = static_cast<int>(used.size());
  if (m != components) return false;
  // A = P C P (P reverses the bands), from the eigenpairs: C = Σ_k (λ_k + ε) v_k v_kᵀ.
  std::vector<double> a(static_cast<size_t>(m) * m, 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j <= i; ++j) {
      double sum = 0;
      for (int k = 0; k < components; ++k)
        sum += inverse.loading(used[m - 1 - i], k) * inverse.variance(k) *
               inverse.loading(used[m - 1 - j], k);
      a[static_cast<size_t>(i) * m + j] = a[static_cast<size_t>(j) * m + i] = sum;
    }
  const BlasThreadsHere threads(fitBlasThreads(m));
  if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', m, a.data(), m) != 0 ||
      LAPACKE_dtrtri(LAPACK_ROW_MAJOR, 'L', 'N', m, a.data(), m) != 0)
    return false;
  // U⁻¹ = P L⁻¹ P: y_i = Σ_{j ≥ i} L⁻¹[m-1-i][m-1-j] d_j.
  for (int i = 0; i < m; ++i)
    for (int j = i; j < m; ++j)
      projection.weights[static_cast<size_t>(used[j]) * projection.components + i] =
          a[static_cast<size_t>(m - 1 - i) * m + (m - 1 - j)];
  return true;
}

// A target's filter: w = A⁻¹ t / tᵀ A⁻¹ t, and tᵀ A⁻¹ t.
std::vector<double> filterOf(const std::vector<double>& inverseTimesTarget,
                             const std::vector<double>& target, const std::string& name,
                             double& power) {
  power = dot(target, inverseTimesTarget);
  if (!(power > 0))
    throw Error("TARGETS", "target '" + name +
                               "' cannot be told from the background in the bands used (it "
                               "equals the image's mean there, or lies in left-out components)");
  std::vector<double> filter(inverseTimesTarget);
  for (double& value : filter) value /= power;
  return filter;
}

}  // namespace

std::string detectMethodName(DetectMethod method) {
  switch (method) {
    case DetectMethod::Rx:
      return "rx";
    case DetectMethod::MatchedFilter:
      return "mf";
    case DetectMethod::Ace:
      return "ace";
    case DetectMethod::Cem:
      return "cem";
  }
  return {};
}

DetectMethod parseDetectMethod(const std::string& name) {
  for (const DetectMethod method :
       {DetectMethod::Rx, DetectMethod::MatchedFilter, DetectMethod::Ace, DetectMethod::Cem})
    if (detectMethodName(method) == name) return method;
  throw Error("METHOD", "the method is mf, ace or cem (or rx), not '" + name + "'");
}

Detector fitDetector(const PcaModel& model, const DetectorOptions& options) {
  checkTargets(model, options);
  const int all = model.componentCount();
  Detector detector;
  detector.components = options.components > 0 ? std::min(options.components, all) : all;
  const int used = detector.components;
  const double meanVariance =
      std::accumulate(model.eigenvalues.begin(), model.eigenvalues.end(), 0.0) / all;
  detector.epsilon = options.shrinkage.value_or(0.0) * meanVariance;
  const bool correlation = options.method == DetectMethod::Cem;
  // R = C (n-1)/n + m mᵀ: its covariance part is the biased one.
  const double n = static_cast<double>(model.validPixels);
  const InverseCovariance inverse(model, used, detector.epsilon,
                                  correlation && n > 1 ? (n - 1) / n : 1.0);
  if (inverse.variance(used - 1) * kLargestCovarianceCondition < inverse.variance(0))
    throw Error("SHRINKAGE",
                QString("the covariance is singular to working precision (its eigenvalues span "
                        "%1 to %2: fewer valid pixels than bands, or bands that are combinations "
                        "of others): give a shrinkage (e.g. 1e-6) or fewer components")
                    .arg(inverse.variance(used - 1), 0, 'g', 3)
                    .arg(inverse.variance(0), 0, 'g', 3)
                    .toStdString());

  Projection& projection = detector.projection;
  projection.bands = model.bands;
  projection.center = correlation ? std::vector<double>(model.bands, 0.0) : model.mean;
  const auto targets = static_cast<int>(options.targets.size());
  switch (options.method) {
    case DetectMethod::Rx:
      projection.components = used;
      break;
    case DetectMethod::Ace:
      projection.components = used + targets;
      break;
    default:
      projection.components = targets;
  }
  projection.weights.assign(static_cast<size_t>(model.bands) * projection.components, 0.0);
  if (options.method == DetectMethod::Rx || options.method == DetectMethod::Ace) {
    if (used < all || !setTriangularWhitened(projection, inverse, used))
      setWhitened(projection, inverse, used);
    projection.scores.whitened = used;
  }
  if (options.method == DetectMethod::Rx) {
    detector.bandNames.push_back("RX (Mahalanobis distance)");
    return detector;
  }
  // CEM: R⁻¹ a = C⁻¹ a - C⁻¹ m (mᵀ C⁻¹ a) / (1 + mᵀ C⁻¹ m) (Sherman-Morrison).
  const std::vector<double> inverseMean =
      correlation ? inverse.apply(model.mean) : std::vector<double>();
  const double meanPower = correlation ? 1.0 + dot(model.mean, inverseMean) : 1.0;
  const int first = options.method == DetectMethod::Ace ? used : 0;
  const std::string label = options.method == DetectMethod::MatchedFilter ? "MF"
                            : options.method == DetectMethod::Ace         ? "ACE"
                                                                          : "CEM";
  for (int t = 0; t < targets; ++t) {
    const Target& target = options.targets[t];
    const std::vector<double> direction = correlation          ? target.spectrum
                                          : options.absorption ? absorbed(model.mean, target)
                                                               : minus(target.spectrum, model.mean);
    std::vector<double> applied = inverse.apply(direction);
    if (correlation) {
      const double along = dot(model.mean, applied) / meanPower;
      for (size_t b = 0; b < applied.size(); ++b) applied[b] -= inverseMean[b] * along;
    }
    double power = 0;
    setColumn(projection, first + t, filterOf(applied, direction, target.name, power));
    if (!correlation && !options.absorption && std::sqrt(power) < kLeastTargetDistance)
      throw Error("TARGETS",
                  QString("target '%1' lies %2 standard deviations of the background from the "
                          "image's mean (its Mahalanobis distance), less than %3: it is the mean "
                          "within rounding, and its scores would be the noise divided by that "
                          "distance; give a spectrum of a material")
                      .arg(QString::fromStdString(target.name))
                      .arg(std::sqrt(power), 0, 'g', 3)
                      .arg(kLeastTargetDistance)
                      .toStdString());
    if (options.method == DetectMethod::Ace) projection.scores.targetPower.push_back(power);
    detector.bandNames.push_back(label + ": " + target.name);
  }
  return detector;
}

}  // namespace hyperstream
