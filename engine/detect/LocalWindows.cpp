#include "detect/LocalWindows.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace hyperstream {

WindowScorer::WindowScorer(int components, const WindowRule& rule)
    : k_(components),
      halo_(rule.window / 2),
      guardHalo_(rule.guard / 2),
      shrinkage_(rule.shrinkage),
      noise_(rule.noise),
      mean_(components),
      covariance_(static_cast<size_t>(components) * components),
      d_(components) {}

double WindowScorer::score(const WindowStrip& strip, int64_t row, int64_t column) {
  const int64_t n = backgroundMean(strip, row, column);
  if (n < 2) return std::numeric_limits<double>::quiet_NaN();
  backgroundCovariance(strip, row, column, n);
  if (!factor()) return std::numeric_limits<double>::quiet_NaN();
  const double* y = strip.components + ((row - strip.firstRow) * strip.width + column) * k_;
  for (int i = 0; i < k_; ++i) d_[i] = y[i] - mean_[i];
  return whitenedSquare();
}

// Calls f(y) for each background pixel, rows then columns in image order.
template <class F>
void WindowScorer::forEachBackground(const WindowStrip& strip, int64_t row, int64_t column,
                                     F&& f) const {
  const int64_t r0 = std::max(strip.firstRow, row - halo_);
  const int64_t r1 = std::min(strip.firstRow + strip.rowCount - 1, row + halo_);
  const int64_t c0 = std::max<int64_t>(0, column - halo_);
  const int64_t c1 = std::min(strip.width - 1, column + halo_);
  for (int64_t r = r0; r <= r1; ++r) {
    const bool guardRow = std::abs(r - row) <= guardHalo_;
    const int64_t first = (r - strip.firstRow) * strip.width;
    for (int64_t c = c0; c <= c1; ++c) {
      if (guardRow && std::abs(c - column) <= guardHalo_) continue;
      if (!strip.valid[first + c]) continue;
      f(strip.components + (first + c) * k_);
    }
  }
}

int64_t WindowScorer::backgroundMean(const WindowStrip& strip, int64_t row, int64_t column) {
  std::fill(mean_.begin(), mean_.end(), 0.0);
  int64_t n = 0;
  double* __restrict mean = mean_.data();
  const int k = k_;
  forEachBackground(strip, row, column, [&](const double* __restrict y) {
    ++n;
    for (int i = 0; i < k; ++i) mean[i] += y[i];
  });
  for (double& m : mean_) m /= static_cast<double>(n);
  return n;
}

// C = Σ (y − m)(y − m)ᵀ / (n − 1) + εI; the lower triangle is used.
void WindowScorer::backgroundCovariance(const WindowStrip& strip, int64_t row, int64_t column,
                                        int64_t n) {
  std::fill(covariance_.begin(), covariance_.end(), 0.0);
  double* __restrict c = covariance_.data();
  double* __restrict d = d_.data();
  const double* __restrict mean = mean_.data();
  const int k = k_;
  forEachBackground(strip, row, column, [&](const double* __restrict y) {
    for (int i = 0; i < k; ++i) d[i] = y[i] - mean[i];
    for (int i = 0; i < k; ++i) {
      const double di = d[i];
      double* __restrict ci = c + static_cast<size_t>(i) * k;
      for (int j = 0; j <= i; ++j) ci[j] += di * d[j];
    }
  });
  const double scale = 1.0 / static_cast<double>(n - 1);
  double trace = 0;
  for (int i = 0; i < k; ++i) {
    for (int j = 0; j <= i; ++j) c[static_cast<size_t>(i) * k + j] *= scale;
    trace += c[static_cast<size_t>(i) * k + i];
  }
  const double epsilon = shrinkage_ * trace / k + noise_;
  for (int i = 0; i < k; ++i) c[static_cast<size_t>(i) * k + i] += epsilon;
}

// The lower Cholesky factor in place; false where a pivot is not above the largest variance
// divided by kWindowLargestCondition.
bool WindowScorer::factor() {
  const int k = k_;
  double* a = covariance_.data();
  double largest = 0;
  for (int i = 0; i < k; ++i) largest = std::max(largest, a[static_cast<size_t>(i) * k + i]);
  if (!(largest > 0)) return false;
  for (int j = 0; j < k; ++j) {
    double* rowJ = a + static_cast<size_t>(j) * k;
    double pivot = rowJ[j];
    for (int m = 0; m < j; ++m) pivot -= rowJ[m] * rowJ[m];
    if (!(pivot > largest / kWindowLargestCondition)) return false;
    rowJ[j] = std::sqrt(pivot);
    for (int i = j + 1; i < k; ++i) {
      double* rowI = a + static_cast<size_t>(i) * k;
      double sum = rowI[j];
      for (int m = 0; m < j; ++m) sum -= rowI[m] * rowJ[m];
      rowI[j] = sum / rowJ[j];
    }
  }
  return true;
}

// |L⁻¹ d|², d_ replaced by L⁻¹ d.
double WindowScorer::whitenedSquare() {
  const int k = k_;
  const double* a = covariance_.data();
  double square = 0;
  for (int i = 0; i < k; ++i) {
    const double* rowI = a + static_cast<size_t>(i) * k;
    double sum = d_[i];
    for (int m = 0; m < i; ++m) sum -= rowI[m] * d_[m];
    d_[i] = sum / rowI[i];
    square += d_[i] * d_[i];
  }
  return square;
}

}  // namespace hyperstream
