#include "detect/ColumnKernels.h"

#include "core/Samples.h"

#include <cstring>

namespace hyperstream::columns {

namespace {

using Lanes = double __attribute__((vector_size(kLanes * sizeof(double))));

// Through references: a 64-byte vector passed by value changes the ABI between the clones.
// Inlined into each clone, with its vector instructions.
[[gnu::always_inline]] inline void loadInto(Lanes& lanes, const double* values) {
  std::memcpy(&lanes, values, sizeof(lanes));
}

[[gnu::always_inline]] inline void store(double* values, const Lanes& lanes) {
  std::memcpy(values, &lanes, sizeof(lanes));
}

}  // namespace

double dot(const double* __restrict x, const double* __restrict y, int n) {
  double partial[4] = {};
  int i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; ++j) partial[j] += x[i + j] * y[i + j];
  for (; i < n; ++i) partial[0] += x[i] * y[i];
  return (partial[0] + partial[1]) + (partial[2] + partial[3]);
}

void forwardSubstitute(const double* factor, const double* d, int bands, double* y) {
  const double* row = factor;
  for (int i = 0; i < bands; ++i) {
    y[i] = (d[i] - dot(row, y, i)) / row[i];
    row += i + 1;
  }
}

// Two vectors of kLanes pixels: eight chains of sums in flight (four were bound by the adds'
// latency).
HYPERSTREAM_VECTOR_CLONES void forwardSubstituteLanes(const double* __restrict factor,
                                                      const double* __restrict d, int bands,
                                                      double* __restrict y) {
  static_assert(kWhitenedPixels == 2 * kLanes);
  // Where band b's kWhitenedPixels values start.
  auto at = [](int b) { return static_cast<size_t>(b) * kWhitenedPixels; };
  const double* row = factor;
  for (int i = 0; i < bands; ++i) {
    Lanes low[4] = {}, high[4] = {}, v, w;
    int k = 0;
    for (; k + 4 <= i; k += 4)
      for (int q = 0; q < 4; ++q) {
        loadInto(v, y + at(k + q));
        loadInto(w, y + at(k + q) + kLanes);
        low[q] += row[k + q] * v;
        high[q] += row[k + q] * w;
      }
    for (; k < i; ++k) {
      loadInto(v, y + at(k));
      loadInto(w, y + at(k) + kLanes);
      low[0] += row[k] * v;
      high[0] += row[k] * w;
    }
    loadInto(v, d + at(i));
    loadInto(w, d + at(i) + kLanes);
    store(y + at(i), (v - ((low[0] + low[1]) + (low[2] + low[3]))) / row[i]);
    store(y + at(i) + kLanes, (w - ((high[0] + high[1]) + (high[2] + high[3]))) / row[i]);
    row += i + 1;
  }
}

// Adds `sum`'s lanes to row[0 ...], the first `count` of them.
[[gnu::always_inline]] inline void addLanes(double* row, const Lanes& sum, int count) {
  if (count >= kLanes) {
    Lanes v;
    loadInto(v, row);
    store(row, v + sum);
  } else {
    for (int l = 0; l < count; ++l) row[l] += sum[l];
  }
}

// Row i of s2, 2 kLanes entries j at a time (eight chains of sums in flight): the products of
// band i's deviations (broadcast) with those of bands j ... (two loads, pixel-major; the last
// lanes of a row's last vectors read the padding, paddedBands' room, and only the row's entries
// are added).
HYPERSTREAM_VECTOR_CLONES void addProducts(const double* __restrict deviations, int n, int bands,
                                           int stride, double* __restrict s2) {
  double* row = s2;
  for (int i = 0; i < bands; ++i) {
    for (int j = i; j < bands; j += 2 * kLanes) {
      Lanes low[4] = {}, high[4] = {}, v, w;
      int k = 0;
      for (; k + 4 <= n; k += 4)
        for (int q = 0; q < 4; ++q) {
          const double* pixel = deviations + static_cast<size_t>(k + q) * stride;
          loadInto(v, pixel + j);
          loadInto(w, pixel + j + kLanes);
          low[q] += pixel[i] * v;
          high[q] += pixel[i] * w;
        }
      for (; k < n; ++k) {
        const double* pixel = deviations + static_cast<size_t>(k) * stride;
        loadInto(v, pixel + j);
        loadInto(w, pixel + j + kLanes);
        low[0] += pixel[i] * v;
        high[0] += pixel[i] * w;
      }
      addLanes(row + (j - i), (low[0] + low[1]) + (low[2] + low[3]), bands - j);
      addLanes(row + (j - i) + kLanes, (high[0] + high[1]) + (high[2] + high[3]),
               bands - j - kLanes);
    }
    row += bands - i;
  }
}

}  // namespace hyperstream::columns
