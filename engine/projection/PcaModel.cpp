#include "projection/PcaModel.h"

#include "core/BlasThreads.h"
#include "core/Error.h"
#include "io/EmptyBands.h"

#include <QCryptographicHash>

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

namespace hyperstream {

std::string matrixTypeName(MatrixType type) {
  return type == MatrixType::Covariance ? "covariance" : "correlation";
}

double PcaModel::explainedPercent(int component) const {
  double total = 0;
  for (int k = 0; k < componentCount(); ++k) total += share(k);
  return total > 0 ? 100.0 * share(component) / total : 0.0;
}

double PcaModel::cumulativePercent(int component) const {
  double total = 0, upTo = 0;
  for (int k = 0; k < componentCount(); ++k) {
    total += share(k);
    if (k <= component) upTo += share(k);
  }
  return total > 0 ? 100.0 * upTo / total : 0.0;
}

int PcaModel::componentsForVariance(double percent) const {
  double total = 0;
  for (int k = 0; k < componentCount(); ++k) total += share(k);
  double upTo = 0.0;
  for (int k = 0; k < componentCount(); ++k) {
    upTo += share(k);
    // A tiny allowance so that 100 % selects every component despite rounding.
    if (100.0 * upTo >= percent * total * (1.0 - 1e-12)) return k + 1;
  }
  return componentCount();
}

std::string fitIdentity(const PcaModel& model) {
  QCryptographicHash hash(QCryptographicHash::Sha256);
  auto add = [&](const std::vector<double>& values) {
    hash.addData(QByteArray::fromRawData(reinterpret_cast<const char*>(values.data()),
                                         static_cast<int>(values.size() * sizeof(double))));
  };
  const int kind[] = {static_cast<int>(model.transform), static_cast<int>(model.matrix),
                      model.bands};
  hash.addData(QByteArray::fromRawData(reinterpret_cast<const char*>(kind), sizeof kind));
  for (const auto* values :
       {&model.mean, &model.stddev, &model.eigenvectors, &model.inverseLoadings})
    add(*values);
  return hash.result().toHex().left(16).toStdString();
}

Projection PcaModel::projection(int components) const {
  Projection result;
  result.bands = bands;
  result.components = components;
  result.center = mean;
  result.weights.assign(static_cast<size_t>(bands) * components, 0.0);
  const int all = componentCount();
  for (int b = 0; b < bands; ++b) {
    const double scale = matrix == MatrixType::Correlation && stddev[b] > 0 ? 1.0 / stddev[b] : 1.0;
    for (int k = 0; k < components; ++k)
      result.weights[static_cast<size_t>(b) * components + k] =
          eigenvectors[static_cast<size_t>(b) * all + k] * scale;
  }
  return result;
}

std::vector<double> PcaModel::restore(int components) const {
  const int all = componentCount();
  const bool mnf = transform == Transform::Mnf;
  if (mnf && inverseLoadings.empty())
    throw Error("STATS",
                "the statistics were saved without MNF's inverse loadings (an older run): fit "
                "again to invert");
  std::vector<double> result(static_cast<size_t>(components) * bands);
  for (int k = 0; k < components; ++k)
    for (int b = 0; b < bands; ++b) {
      const size_t at = static_cast<size_t>(b) * all + k;
      const double scale = matrix == MatrixType::Correlation ? stddev[b] : 1.0;
      result[static_cast<size_t>(k) * bands + b] =
          mnf ? inverseLoadings[at] : eigenvectors[at] * scale;
    }
  return result;
}

Projection PcaModel::rebuilding(int components) const {
  Projection result = projection(components);
  result.outputs = bands;
  result.restore = restore(components);
  result.offset = mean;
  return result;
}

namespace {

// Values near float64's limit (1e300) square to infinity: the statistics then hold inf or NaN,
// which LAPACK refuses with a bare "info -6" and which would project to infinities.
void checkFinite(const Moments& moments, const std::vector<double>& covariance,
                 const std::vector<int>& used) {
  const int bands = moments.bands;
  for (int b : used) {
    bool finite = std::isfinite(moments.mean[b]);
    for (int c : used)
      finite = finite && std::isfinite(covariance[static_cast<size_t>(b) * bands + c]);
    if (finite) continue;
    throw varianceOverflow(b, std::max(std::abs(moments.minimum[b]), std::abs(moments.maximum[b])),
                           "");
  }
}

}  // namespace

double PcaModel::componentBound(int component) const {
  if (minimum.empty()) return 0;  // a saved model: the fitting image's ranges are not kept
  const Projection transform = projection(component + 1);
  double bound = 0;
  for (int b = 0; b < bands; ++b) {
    const double spread = std::max(maximum[b] - mean[b], mean[b] - minimum[b]);
    bound +=
        std::abs(transform.weights[static_cast<size_t>(b) * transform.components + component]) *
        spread;
  }
  return bound;
}

PcaModel describeBands(const Moments& moments, MatrixType matrix, std::vector<int>& used,
                       std::vector<std::string>& warnings) {
  if (moments.count == 0)
    throw NoValidPixel("no valid pixel: every pixel is nodata or not finite in at least one band");
  if (moments.count < 2) throw Error("INPUT", "only one valid pixel: a fit needs at least two");
  PcaModel model;
  model.matrix = matrix;
  model.bands = moments.bands;
  model.validPixels = moments.count;
  model.mean = moments.mean;
  model.minimum = moments.minimum;
  model.maximum = moments.maximum;
  const std::vector<double> covariance = moments.covariance();
  const int bands = moments.bands;
  used.clear();
  for (int b = 0; b < bands; ++b) {
    model.stddev.push_back(
        std::sqrt(std::max(0.0, covariance[static_cast<size_t>(b) * bands + b])));
    if (moments.minimum[b] == moments.maximum[b])
      model.constantBands.push_back(b);
    else
      used.push_back(b);
  }
  if (!model.constantBands.empty()) {
    std::string list;
    for (int b : model.constantBands) list += (list.empty() ? "" : ", ") + std::to_string(b + 1);
    warnings.push_back(std::to_string(model.constantBands.size()) +
                       " constant band(s) left out of the fit (selected band number " + list +
                       "): their variance is zero and their correlation undefined");
  }
  if (used.empty()) throw Error("INPUT", "every selected band is constant over the valid pixels");
  // Huge values: whether the sums overflowed (checkFinite) says it best, naming the band.
  checkProductScale(moments, std::numeric_limits<double>::infinity());
  checkFinite(moments, covariance, used);
  return model;
}

std::vector<double> usedMatrix(const std::vector<double>& matrix, int bands,
                               const std::vector<int>& used, const std::vector<double>& scale) {
  const size_t m = used.size();
  std::vector<double> a(m * m);
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < m; ++j) {
      double value = matrix[static_cast<size_t>(used[i]) * bands + used[j]];
      if (!scale.empty()) value /= scale[used[i]] * scale[used[j]];
      a[i * m + j] = value;
    }
  return a;
}

void setComponents(PcaModel& model, const std::vector<int>& used, const std::vector<double>& values,
                   const std::vector<double>& vectors) {
  const int m = static_cast<int>(used.size());
  model.eigenvalues.resize(m);
  model.eigenvectors.assign(static_cast<size_t>(model.bands) * m, 0.0);
  for (int k = 0; k < m; ++k) {
    const int source = m - 1 - k;
    model.eigenvalues[k] = std::max(0.0, values[source]);
    int largest = 0;
    for (int i = 1; i < m; ++i)
      if (std::abs(vectors[static_cast<size_t>(i) * m + source]) >
          std::abs(vectors[static_cast<size_t>(largest) * m + source]))
        largest = i;
    const double sign = vectors[static_cast<size_t>(largest) * m + source] < 0 ? -1.0 : 1.0;
    for (int i = 0; i < m; ++i)
      model.eigenvectors[static_cast<size_t>(used[i]) * m + k] =
          sign * vectors[static_cast<size_t>(i) * m + source];
  }
}

PcaModel fitPca(const Moments& moments, MatrixType matrix, std::vector<std::string>& warnings) {
  std::vector<int> used;
  PcaModel model = describeBands(moments, matrix, used, warnings);
  const int m = static_cast<int>(used.size());
  const BlasThreadsHere threads(fitBlasThreads(m));
  std::vector<double> a =
      usedMatrix(moments.covariance(), moments.bands, used,
                 matrix == MatrixType::Correlation ? model.stddev : std::vector<double>());
  std::vector<double> values(m);
  std::vector<double> vectors(static_cast<size_t>(m) * m);
  std::vector<lapack_int> support(2 * static_cast<size_t>(m));
  lapack_int found = 0;
  const lapack_int info =
      LAPACKE_dsyevr(LAPACK_ROW_MAJOR, 'V', 'A', 'U', m, a.data(), m, 0.0, 0.0, 0, 0, 0.0, &found,
                     values.data(), vectors.data(), m, support.data());
  if (info != 0 || found != m)
    throw Error("INPUT", "the eigen-decomposition of the bands' " + matrixTypeName(matrix) +
                             " matrix did not converge: their values may span too many orders of "
                             "magnitude; rescale the bands or leave the extreme ones out");
  setComponents(model, used, values, vectors);
  return model;
}

}  // namespace hyperstream
