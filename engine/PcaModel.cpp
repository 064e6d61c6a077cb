#include "PcaModel.h"

#include "Error.h"

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hyperstream {

std::string matrixTypeName(MatrixType type) {
  return type == MatrixType::Covariance ? "covariance" : "correlation";
}

double PcaModel::explainedPercent(int component) const {
  const double total = std::accumulate(eigenvalues.begin(), eigenvalues.end(), 0.0);
  return total > 0 ? 100.0 * eigenvalues[component] / total : 0.0;
}

double PcaModel::cumulativePercent(int component) const {
  const double total = std::accumulate(eigenvalues.begin(), eigenvalues.end(), 0.0);
  const double upTo =
      std::accumulate(eigenvalues.begin(), eigenvalues.begin() + component + 1, 0.0);
  return total > 0 ? 100.0 * upTo / total : 0.0;
}

int PcaModel::componentsForVariance(double percent) const {
  const double total = std::accumulate(eigenvalues.begin(), eigenvalues.end(), 0.0);
  double upTo = 0.0;
  for (int k = 0; k < componentCount(); ++k) {
    upTo += eigenvalues[k];
    // A tiny allowance so that 100 % selects every component despite rounding.
    if (100.0 * upTo >= percent * total * (1.0 - 1e-12)) return k + 1;
  }
  return componentCount();
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

PcaModel fitPca(const Moments& moments, MatrixType matrix, std::vector<std::string>& warnings) {
  if (moments.count == 0)
    throw Error("INPUT",
                "no valid pixel: every pixel is nodata or not finite in at least one band");
  if (moments.count < 2) throw Error("INPUT", "only one valid pixel: PCA needs at least two");
  PcaModel model;
  model.matrix = matrix;
  model.bands = moments.bands;
  model.validPixels = moments.count;
  model.mean = moments.mean;
  model.minimum = moments.minimum;
  model.maximum = moments.maximum;
  const std::vector<double> covariance = moments.covariance();
  const int bands = moments.bands;
  std::vector<int> used;
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
  const int m = static_cast<int>(used.size());
  if (m == 0) throw Error("INPUT", "every selected band is constant over the valid pixels");

  // The matrix of the non-constant bands.
  std::vector<double> a(static_cast<size_t>(m) * m);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j) {
      double value = covariance[static_cast<size_t>(used[i]) * bands + used[j]];
      if (matrix == MatrixType::Correlation) value /= model.stddev[used[i]] * model.stddev[used[j]];
      a[static_cast<size_t>(i) * m + j] = value;
    }

  std::vector<double> values(m);
  std::vector<double> vectors(static_cast<size_t>(m) * m);
  std::vector<lapack_int> support(2 * static_cast<size_t>(m));
  lapack_int found = 0;
  const lapack_int info =
      LAPACKE_dsyevr(LAPACK_ROW_MAJOR, 'V', 'A', 'U', m, a.data(), m, 0.0, 0.0, 0, 0, 0.0, &found,
                     values.data(), vectors.data(), m, support.data());
  if (info != 0 || found != m)
    throw Error("",
                "the eigen-decomposition failed (LAPACK dsyevr info " + std::to_string(info) + ")");

  // Descending order; loadings expanded back to every selected band.
  model.eigenvalues.resize(m);
  model.eigenvectors.assign(static_cast<size_t>(bands) * m, 0.0);
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
  return model;
}

}  // namespace hyperstream
