#include "pixels/LocalWindows.h"

#include "core/Samples.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace hyperstream {

namespace {

// Aligned as their elements: vectors of work memory need no more than std::vector gives them.
using Lanes =
    double __attribute__((vector_size(kWindowLanes * sizeof(double)), aligned(sizeof(double))));
using LaneMask =
    int64_t __attribute__((vector_size(kWindowLanes * sizeof(int64_t)), aligned(sizeof(int64_t))));

[[gnu::always_inline]] inline void loadInto(Lanes& lanes, const double* values) {
  std::memcpy(&lanes, values, sizeof(lanes));
}

// The lanes' windows as scoreLanes reads them (WindowScorer's tile): component i of the pixel at
// tile offset o is components[o + i * width], its validity valid[...] as 1 or 0.
struct Tile {
  const double* components;
  const double* valid;
  const WindowScorer::Offsets* background;  // of lane 0's background pixels, rows then columns
                                            // in image order
  int backgroundCount;
  WindowScorer::Offsets centre;  // of lane 0's own pixel
  int width;                     // of a tile row
  int k;
};

// Background pixels whose products scoreLanes adds to the covariance in one sweep over it.
constexpr int kProductPixels = 4;  // scoreLanes names each of them

// Background pixel p's deviations from the mean, zero where the pixel is invalid.
[[gnu::always_inline]] inline void deviationsOf(const Tile& tile, int p, const Lanes* mean,
                                                Lanes* d) {
  const double* y = tile.components + tile.background[p].components;
  Lanes valid, value;
  loadInto(valid, tile.valid + tile.background[p].valid);
  const Lanes zero{};
  const LaneMask inBackground = valid != zero;
  for (int i = 0; i < tile.k; ++i) {
    loadInto(value, y + static_cast<size_t>(i) * tile.width);
    d[i] = inBackground ? value - mean[i] : zero;
  }
}

// work: kWindowLanes × ((1 + kProductPixels) K + K(K + 1)/2) values. Each lane: the background's
// mean and covariance in two passes (invalid pixels add zeros), C + εI factored by Cholesky,
// |L⁻¹(y − m)|²; NaN where the pixel is invalid, fewer than two background pixels are valid or a
// pivot is not above the largest variance / kWindowLargestCondition or its own variance ×
// kWindowLeastPivotShare. The operations and their
// order are LocalWindows.h's, lane by lane.
HYPERSTREAM_VECTOR_CLONES void scoreLanes(const Tile& tile, double shrinkage, double noise,
                                          double* work, double* scores) {
  const int k = tile.k, width = tile.width;
  Lanes* __restrict mean = reinterpret_cast<Lanes*>(work);
  Lanes* __restrict d = mean + k;  // kProductPixels pixels' deviations
  Lanes* __restrict c = d + static_cast<size_t>(kProductPixels) *
                                k;  // the lower triangle, row i from c[i (i + 1) / 2]
  const Lanes zero{};
  for (int i = 0; i < k; ++i) mean[i] = zero;
  for (int e = 0; e < k * (k + 1) / 2; ++e) c[e] = zero;
  Lanes n = zero, valid, value;
  for (int p = 0; p < tile.backgroundCount; ++p) {
    const double* y = tile.components + tile.background[p].components;
    loadInto(valid, tile.valid + tile.background[p].valid);
    n += valid;
    for (int i = 0; i < k; ++i) {
      loadInto(value, y + static_cast<size_t>(i) * width);
      mean[i] += value;
    }
  }
  for (int i = 0; i < k; ++i) mean[i] /= n;
  // Each entry adds the pixels' products in their order, kProductPixels of them per load and
  // store of the entry.
  int p = 0;
  for (; p + kProductPixels <= tile.backgroundCount; p += kProductPixels) {
    for (int s = 0; s < kProductPixels; ++s)
      deviationsOf(tile, p + s, mean, d + static_cast<size_t>(s) * k);
    for (int i = 0; i < k; ++i) {
      const Lanes d0 = d[i], d1 = d[k + i], d2 = d[2 * k + i], d3 = d[3 * k + i];
      Lanes* __restrict ci = c + i * (i + 1) / 2;
      for (int j = 0; j <= i; ++j) {
        Lanes sum = ci[j];
        sum += d0 * d[j];
        sum += d1 * d[k + j];
        sum += d2 * d[2 * k + j];
        sum += d3 * d[3 * k + j];
        ci[j] = sum;
      }
    }
  }
  for (; p < tile.backgroundCount; ++p) {
    deviationsOf(tile, p, mean, d);
    for (int i = 0; i < k; ++i) {
      Lanes* __restrict ci = c + i * (i + 1) / 2;
      for (int j = 0; j <= i; ++j) ci[j] += d[i] * d[j];
    }
  }
  const Lanes scale = (zero + 1.0) / (n - 1.0);
  Lanes trace = zero;
  for (int i = 0; i < k; ++i) {
    Lanes* ci = c + i * (i + 1) / 2;
    for (int j = 0; j <= i; ++j) ci[j] *= scale;
    trace += ci[i];
  }
  const Lanes epsilon = shrinkage * trace / k + noise;
  Lanes largest = zero;
  for (int i = 0; i < k; ++i) {
    Lanes& cii = c[i * (i + 1) / 2 + i];
    cii += epsilon;
    largest = largest < cii ? cii : largest;
  }
  loadInto(valid, tile.valid + tile.centre.valid);
  LaneMask failed = (n < 2.0) | ((largest > zero) == 0) | (valid == zero) |
                    (((n > static_cast<double>(k)) | (epsilon > zero)) == 0);
  // Cholesky, lower, in place.
  for (int j = 0; j < k; ++j) {
    Lanes* cj = c + j * (j + 1) / 2;
    Lanes pivot = cj[j];
    for (int m = 0; m < j; ++m) pivot -= cj[m] * cj[m];
    failed |= (pivot > largest / kWindowLargestCondition) == 0;
    failed |= (pivot > cj[j] * kWindowLeastPivotShare) == 0;
    double root[kWindowLanes];
    std::memcpy(root, &pivot, sizeof(root));
    for (double& r : root) r = std::sqrt(r);
    std::memcpy(&cj[j], root, sizeof(root));
    for (int i = j + 1; i < k; ++i) {
      Lanes* ci = c + i * (i + 1) / 2;
      Lanes sum = ci[j];
      for (int m = 0; m < j; ++m) sum -= ci[m] * cj[m];
      ci[j] = sum / cj[j];
    }
  }
  // |L⁻¹ (y − m)|².
  const double* y = tile.components + tile.centre.components;
  for (int i = 0; i < k; ++i) {
    loadInto(value, y + static_cast<size_t>(i) * width);
    d[i] = value - mean[i];
  }
  Lanes square = zero;
  for (int i = 0; i < k; ++i) {
    const Lanes* ci = c + i * (i + 1) / 2;
    Lanes sum = d[i];
    for (int m = 0; m < i; ++m) sum -= ci[m] * d[m];
    d[i] = sum / ci[i];
    square += d[i] * d[i];
  }
  square = failed ? zero + std::numeric_limits<double>::quiet_NaN() : square;
  std::memcpy(scores, &square, sizeof(square));
}

}  // namespace

WindowScorer::WindowScorer(int components, const WindowRule& rule)
    : k_(components),
      halo_(rule.window / 2),
      guardHalo_(rule.guard / 2),
      shrinkage_(rule.shrinkage),
      noise_(rule.noise),
      tileWidth_(kWindowLanes + 2 * halo_),
      tile_(static_cast<size_t>(rule.window) * components * tileWidth_),
      valid_(static_cast<size_t>(rule.window) * tileWidth_),
      work_(static_cast<size_t>(kWindowLanes) *
            ((1 + kProductPixels) * components + components * (components + 1) / 2)) {}

// The components of the window rows (those the strip holds) over the lanes' columns (and the
// background's offsets in them where the rows differ from the previous tile's).
void WindowScorer::gatherTile(const WindowStrip& strip, int64_t row, int64_t column) {
  const int64_t r0 = std::max(strip.firstRow, row - halo_);
  const int64_t r1 = std::min(strip.firstRow + strip.rowCount - 1, row + halo_);
  const int rows = static_cast<int>(r1 - r0 + 1), centreRow = static_cast<int>(row - r0);
  if (rows != tileRows_ || centreRow != centreRow_ || background_.empty())
    listBackground(rows, centreRow);
  for (int r = 0; r < tileRows_; ++r) {
    const int64_t first = (r0 + r - strip.firstRow) * strip.width;
    double* components = tile_.data() + static_cast<size_t>(r) * k_ * tileWidth_;
    for (int t = 0; t < tileWidth_; ++t) {
      const int64_t c = column - halo_ + t;
      const bool valid = c >= 0 && c < strip.width && strip.valid[first + c] != 0;
      valid_[static_cast<size_t>(r) * tileWidth_ + t] = valid ? 1.0 : 0.0;
      const double* y = valid ? strip.components + (first + c) * k_ : nullptr;
      for (int i = 0; i < k_; ++i)
        components[static_cast<size_t>(i) * tileWidth_ + t] = y ? y[i] : 0.0;
    }
  }
}

// The background's offsets in a tile of `rows` rows whose pixels sit in row `centreRow`: they
// change only where the window meets the strip's first or last rows.
void WindowScorer::listBackground(int rows, int centreRow) {
  tileRows_ = rows;
  centreRow_ = centreRow;
  background_.clear();
  for (int r = 0; r < tileRows_; ++r) {
    const bool guardRow = std::abs(r - centreRow_) <= guardHalo_;
    for (int dc = -halo_; dc <= halo_; ++dc) {
      if (guardRow && std::abs(dc) <= guardHalo_) continue;
      background_.push_back({r * k_ * tileWidth_ + halo_ + dc, r * tileWidth_ + halo_ + dc});
    }
  }
}

void WindowScorer::score(const WindowStrip& strip, int64_t row, int64_t column, double* scores) {
  gatherTile(strip, row, column);
  const Tile tile{tile_.data(),
                  valid_.data(),
                  background_.data(),
                  static_cast<int>(background_.size()),
                  {centreRow_ * k_ * tileWidth_ + halo_, centreRow_ * tileWidth_ + halo_},
                  tileWidth_,
                  k_};
  scoreLanes(tile, shrinkage_, noise_, work_.data(), scores);
}

}  // namespace hyperstream
