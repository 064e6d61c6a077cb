#pragma once
// The vector loops of the CPU's PCA kernels (projection/CpuPcaKernels.cpp, their one includer):
// the shifted sums of the float64 moments, and the projection's centring, blocks of components
// summed in registers, rebuilt pixels and the encoders of each output type. Plain loops over
// unaliased arrays that the compiler vectorises, cloned per instruction set
// (HYPERSTREAM_VECTOR_CLONES); internal to that file, as they were in it.

#include "core/CacheLineVector.h"
#include "core/Rounding.h"
#include "core/Samples.h"
#include "projection/PcaKernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace hyperstream {
// One includer: the loops keep their internal linkage (and their clones).
namespace {

// The projection splits batches of this many pixels per worker over the worker threads, which
// centre and project them block by block (the centred block stays in the core's cache).
constexpr int64_t kBatchPixelsPerWorker = 8192;
constexpr int64_t kProjectBlockPixels = 256;
// Components per pass of the projection kernel: one AVX-512 register of floats.
constexpr int kComponentBlock = 16;

// row = pixel - shift, and the running sum and range of the band values. Separate, unaliased
// arrays let the compiler vectorise over the bands.
template <class T>
HYPERSTREAM_VECTOR_CLONES void addShiftedPixel(const T* __restrict pixel,
                                               const double* __restrict shift,
                                               double* __restrict row, double* __restrict sum,
                                               double* __restrict lo, double* __restrict hi,
                                               int bands) {
  for (int b = 0; b < bands; ++b) {
    const double v = static_cast<double>(pixel[b]);
    row[b] = v - shift[b];
    sum[b] += row[b];
    lo[b] = v < lo[b] ? v : lo[b];
    hi[b] = v > hi[b] ? v : hi[b];
  }
}

// addShiftedPixel for band-major samples, one band of a chunk: column[i * bands] = band[pixels[i]]
// - shift for the chunk's valid pixels, with the band's sum (in pixel order, as addShiftedPixel
// adds it) and range.
template <class T>
HYPERSTREAM_VECTOR_CLONES void addShiftedBand(const T* __restrict band,
                                              const int64_t* __restrict pixels, int64_t count,
                                              double shift, double* __restrict column, int bands,
                                              double* __restrict sum, double* __restrict lo,
                                              double* __restrict hi) {
  double total = *sum;
  double smallest = *lo;
  double largest = *hi;
  for (int64_t i = 0; i < count; ++i) {
    const double v = static_cast<double>(band[pixels[i]]);
    const double row = v - shift;
    column[i * bands] = row;
    total += row;
    smallest = v < smallest ? v : smallest;
    largest = v > largest ? v : largest;
  }
  *sum = total;
  *lo = smallest;
  *hi = largest;
}

// row = pixel - center, in float64 (exact for every input type), rounded once to C.
template <class T, class C>
HYPERSTREAM_VECTOR_CLONES void centrePixel(const T* __restrict pixel,
                                           const double* __restrict center, C* __restrict row,
                                           int bands) {
  for (int b = 0; b < bands; ++b)
    row[b] = static_cast<C>(static_cast<double>(pixel[b]) - center[b]);
}

// Integer samples: row = pixel - shift with an integer shift (the rounded centre), exact in
// integers and rounded once to C, at full vector width; the shift's remainder is taken out of
// the projected values as a per-component bias.
template <class T>
using ShiftInteger = std::conditional_t<(sizeof(T) < 4), int32_t, int64_t>;
template <class T, class C>
HYPERSTREAM_VECTOR_CLONES void shiftPixel(const T* __restrict pixel,
                                          const ShiftInteger<T>* __restrict shift,
                                          C* __restrict row, int bands) {
  for (int b = 0; b < bands; ++b)
    row[b] = static_cast<C>(static_cast<ShiftInteger<T>>(pixel[b]) - shift[b]);
}

// Σ values[k]² in float64, in eight running sums (a vector's lanes) added at the end.
template <class C>
HYPERSTREAM_VECTOR_CLONES double sumOfSquares(const C* __restrict values, int count) {
  double sums[8] = {};
  int k = 0;
  for (; k + 8 <= count; k += 8)
    for (int lane = 0; lane < 8; ++lane) {
      const auto value = static_cast<double>(values[k + lane]);
      sums[lane] += value * value;
    }
  for (; k < count; ++k)
    sums[k % 8] += static_cast<double>(values[k]) * static_cast<double>(values[k]);
  return ((sums[0] + sums[1]) + (sums[2] + sums[3])) + ((sums[4] + sums[5]) + (sums[6] + sums[7]));
}

// W values of C in one vector (GCC/clang vector extension).
template <class C, int W>
struct ComponentLanes {
  using type __attribute__((vector_size(W * sizeof(C)))) = C;
};

// One block of at most kComponentBlock components as the projection kernels take it: their
// weights (band b's row at weights[b * kComponentBlock], padded with zeros), their bias, the
// output column of each, and the first band with a weight other than 0, of the block and of
// each component (ascending: the bands before it add nothing and are skipped).
template <class C>
struct WeightBlock {
  const C* weights;
  const C* bias;
  const int* columns;
  const int* firstBands;  // per component
  int firstBand;          // firstBands[0]
  int components;
};

// Writes a pixel's sums `lanes` of components k0 ... k0 + chunk - 1 of the block, less the bias,
// into their columns of the pixel's row `out`.
template <class C>
void storeSums(const C* __restrict lanes, int k0, int chunk, const WeightBlock<C>& block,
               C* __restrict out) {
  for (int k = 0; k < chunk; ++k) out[block.columns[k0 + k]] = lanes[k] - block.bias[k0 + k];
}

// projectBlock's sums W components at a time over `count` pixels, eight pixels sharing each
// weight row.
template <class C, int W>
HYPERSTREAM_VECTOR_CLONES void projectOneVector(const C* __restrict rows, int64_t count, int bands,
                                                const WeightBlock<C>& block, C* __restrict out,
                                                int outStride) {
  using Lanes = typename ComponentLanes<C, W>::type;
  constexpr int kPixels = 8;
  const C* __restrict weights = block.weights;
  for (int k0 = 0; k0 < block.components; k0 += W) {
    auto loadWeights = [&](int b, Lanes& w) {
      std::memcpy(&w, weights + static_cast<int64_t>(b) * kComponentBlock + k0, sizeof(w));
    };
    const int chunk = std::min(W, block.components - k0);
    const int firstBand = block.firstBands[k0];
    int64_t p = 0;
    for (; p + kPixels <= count; p += kPixels) {
      Lanes sum[kPixels] = {};
      for (int b = firstBand; b < bands; ++b) {
        Lanes w;
        loadWeights(b, w);
        for (int q = 0; q < kPixels; ++q) sum[q] += rows[(p + q) * bands + b] * w;
      }
      C lanes[kPixels][W];
      std::memcpy(lanes, sum, sizeof(lanes));
      for (int q = 0; q < kPixels; ++q)
        storeSums(lanes[q], k0, chunk, block, out + (p + q) * outStride);
    }
    for (; p < count; ++p) {
      Lanes sum = {};
      for (int b = firstBand; b < bands; ++b) {
        Lanes w;
        loadWeights(b, w);
        sum += rows[p * bands + b] * w;
      }
      C lanes[W];
      std::memcpy(lanes, &sum, sizeof(lanes));
      storeSums(lanes, k0, chunk, block, out + p * outStride);
    }
  }
}

// projectBlock's sums for a block of two vectors, P pixels at a time: each band's two weight
// vectors serve P pixels and 2P sums run at once (P = 8 fills AVX-512's 32 registers, 6 AVX2's
// 16). On a Xeon core this ran a third more multiply-adds a second than one vector over eight
// pixels. The pixels that fill no group of P go through projectOneVector.
template <class C, int W, int P>
HYPERSTREAM_VECTOR_CLONES void projectTwoVectors(const C* __restrict rows, int64_t count, int bands,
                                                 const WeightBlock<C>& block, C* __restrict out,
                                                 int outStride) {
  static_assert(2 * W == kComponentBlock);
  using Lanes = typename ComponentLanes<C, W>::type;
  const C* __restrict weights = block.weights;
  // Before the high vector's first band (a triangular factor's block) only the low one runs.
  const int highFirstBand = block.firstBands[W];
  int64_t p = 0;
  for (; p + P <= count; p += P) {
    Lanes low[P] = {}, high[P] = {};
    for (int b = block.firstBand; b < highFirstBand; ++b) {
      Lanes w0;
      std::memcpy(&w0, weights + static_cast<int64_t>(b) * kComponentBlock, sizeof(w0));
      for (int q = 0; q < P; ++q) low[q] += rows[(p + q) * bands + b] * w0;
    }
    for (int b = highFirstBand; b < bands; ++b) {
      Lanes w0, w1;
      std::memcpy(&w0, weights + static_cast<int64_t>(b) * kComponentBlock, sizeof(w0));
      std::memcpy(&w1, weights + static_cast<int64_t>(b) * kComponentBlock + W, sizeof(w1));
      for (int q = 0; q < P; ++q) {
        const C x = rows[(p + q) * bands + b];
        low[q] += x * w0;
        high[q] += x * w1;
      }
    }
    C lanes[P][2 * W];
    for (int q = 0; q < P; ++q) {
      std::memcpy(lanes[q], &low[q], sizeof(low[q]));
      std::memcpy(lanes[q] + W, &high[q], sizeof(high[q]));
    }
    for (int q = 0; q < P; ++q)
      storeSums(lanes[q], 0, block.components, block, out + (p + q) * outStride);
  }
  if (p < count)
    projectOneVector<C, W>(rows + p * bands, count - p, bands, block, out + p * outStride,
                           outStride);
}

// out[p][columns[k]] = Σ_b rows[p][b] · weights[b][k] - bias[k] for the block's components k,
// p < count, in vectors of W components: 64 bytes on AVX-512, 32 elsewhere (see wideVectors).
// Each pixel's sum runs over the bands in order, so the result does not depend on how pixels are
// cut or grouped.
template <class C, int W>
void projectBlock(const C* rows, int64_t count, int bands, const WeightBlock<C>& block, C* out,
                  int outStride) {
  constexpr int kPixels = W * sizeof(C) == 64 ? 8 : 6;
  if constexpr (2 * W == kComponentBlock) {
    if (block.components > W)
      return projectTwoVectors<C, W, kPixels>(rows, count, bands, block, out, outStride);
  }
  projectOneVector<C, W>(rows, count, bands, block, out, outStride);
}

// How band-major samples are centred: integers less their shift, others less the centre.
template <class T>
struct Centring {
  const ShiftInteger<T>* shift;
  const double* center;
};

// Band-major samples of `count` pixels (band b's at data[b * bandStep]) centred as shiftPixel and
// centrePixel do, invalid pixels as zeros, into rows[b * stride + p]; the `stride - count` values
// after each band's are zeros. Once per block of pixels: every block of components reads them.
template <class T, class C>
HYPERSTREAM_VECTOR_CLONES void centreBands(const T* __restrict data, int64_t bandStep,
                                           const unsigned char* __restrict valid, int64_t count,
                                           int bands, Centring<T> centring, int64_t stride,
                                           C* __restrict rows) {
  for (int b = 0; b < bands; ++b) {
    const T* __restrict samples = data + b * bandStep;
    C* __restrict row = rows + b * stride;
    for (int64_t p = 0; p < count; ++p) {
      C value;
      if constexpr (std::is_integral_v<T>)
        value = static_cast<C>(static_cast<ShiftInteger<T>>(samples[p]) - centring.shift[b]);
      else
        value = static_cast<C>(static_cast<double>(samples[p]) - centring.center[b]);
      row[p] = valid[p] ? value : C(0);
    }
    std::fill(row + count, row + stride, C(0));
  }
}

// sum[k] += row(b) · weights[b][k] for the first Active sums, bands [b0, b1).
template <int Active, class Lanes, class C, int Sums>
__attribute__((always_inline)) inline void addBands(Lanes (&sum)[Sums], const C* __restrict rows,
                                                    int64_t stride, const C* __restrict weights,
                                                    int b0, int b1) {
  for (int b = b0; b < b1; ++b) {
    Lanes row;
    std::memcpy(&row, rows + b * stride, sizeof(row));
#pragma GCC unroll 16
    for (int k = 0; k < Active; ++k) sum[k] += row * weights[b * kComponentBlock + k];
  }
}

// projectBlock for centred band-major rows (centreBands), W pixels at a time, one per lane, of
// `count` pixels. Each lane runs the same operations, in the same order, as projectBlock's lane
// for that component, so the values are bitwise the same. The sums start four at a time, each
// four at the first band their first component weighs (its leading zero products add nothing).
template <class C, int W, int Sums>
HYPERSTREAM_VECTOR_CLONES void projectCentredBands(const C* __restrict rows, int64_t stride,
                                                   int64_t count, int bands,
                                                   const WeightBlock<C>& block, C* __restrict out,
                                                   int outStride) {
  static_assert(Sums % 4 == 0 && Sums <= kComponentBlock);
  using Lanes = typename ComponentLanes<C, W>::type;
  int start[Sums / 4 + 1];
  for (int q = 0; q < Sums / 4; ++q)
    start[q] = 4 * q < block.components ? block.firstBands[4 * q] : bands;
  start[Sums / 4] = bands;
  for (int64_t p0 = 0; p0 < count; p0 += W) {
    const C* pixels = rows + p0;
    Lanes sum[Sums] = {};
    addBands<4>(sum, pixels, stride, block.weights, start[0], start[1]);
    if constexpr (Sums >= 8) addBands<8>(sum, pixels, stride, block.weights, start[1], start[2]);
    if constexpr (Sums >= 12) addBands<12>(sum, pixels, stride, block.weights, start[2], start[3]);
    if constexpr (Sums >= 16) addBands<16>(sum, pixels, stride, block.weights, start[3], bands);
    // Through an array written once: reading the sums' lanes in place made GCC keep (and clear,
    // every eight pixels) a copy of them on the stack.
    C lanes[Sums][W];
    for (int k = 0; k < Sums; ++k) std::memcpy(lanes[k], &sum[k], sizeof(lanes[k]));
    const int64_t filled = std::min<int64_t>(W, count - p0);
    for (int64_t l = 0; l < filled; ++l)
      for (int k = 0; k < block.components; ++k)
        out[(p0 + l) * outStride + block.columns[k]] = lanes[k][l] - block.bias[k];
  }
}

// projectCentredBands with as many sums as the components take in fours (the weights' padding
// needs none).
template <class C, int W>
void projectBands(const C* rows, int64_t stride, int64_t count, int bands,
                  const WeightBlock<C>& block, C* out, int outStride) {
  static_assert(kComponentBlock == 16);
  const auto project = block.components <= 4    ? projectCentredBands<C, W, 4>
                       : block.components <= 8  ? projectCentredBands<C, W, 8>
                       : block.components <= 12 ? projectCentredBands<C, W, 12>
                                                : projectCentredBands<C, W, 16>;
  project(rows, stride, count, bands, block, out, outStride);
}

// toSample (core/Rounding.h) on eight float64 values at once, for floating-point outputs and
// integer ones whose whole numbers convert through int32: the same steps lane by lane, so the
// same bits. The step off nodata runs only for eight values of which one rounds onto nodata.
template <class Out>
constexpr bool kEncodesLanes = std::is_floating_point_v<Out> || sizeof(Out) < sizeof(int32_t);

using DoubleLanes = ComponentLanes<double, 8>::type;
using WholeLanes = ComponentLanes<int32_t, 8>::type;

template <class Out>
class LaneEncoder {
 public:
  LaneEncoder(double nodata, bool avoidNodata) {
    if constexpr (std::is_integral_v<Out>) {
      // A nodata that no whole number in range equals is never reserved (roundClamped's test).
      reserved_ =
          avoidNodata && nodata >= kLowest && nodata <= kHighest && nodata == std::trunc(nodata);
      if (!reserved_) return;
      nodata_ = nodata;
      nodataWhole_ = static_cast<int32_t>(nodata);
      up_ = nodata == kHighest ? nodataWhole_ - 1 : nodataWhole_ + 1;
      down_ = nodata == kLowest ? nodataWhole_ + 1 : nodataWhole_ - 1;
    }
  }

  [[gnu::always_inline]] void store(DoubleLanes v, Out* out) const {
    if constexpr (std::is_floating_point_v<Out>) {
      const auto values = __builtin_convertvector(v, typename ComponentLanes<Out, 8>::type);
      std::memcpy(out, &values, sizeof(values));
    } else {
      const DoubleLanes zero{};
      v = v < kLowest - 1 ? zero + (kLowest - 1) : v;
      v = v > kHighest + 1 ? zero + (kHighest + 1) : v;
      const DoubleLanes half = v < zero ? zero - 0.49999999999999994 : zero + 0.49999999999999994;
      // The conversion truncates: std::trunc of the sum, which the clamp keeps within int32.
      WholeLanes whole = __builtin_convertvector(v + half, WholeLanes);
      const WholeLanes none{};
      whole = whole < static_cast<int32_t>(kLowest) ? none + static_cast<int32_t>(kLowest) : whole;
      whole =
          whole > static_cast<int32_t>(kHighest) ? none + static_cast<int32_t>(kHighest) : whole;
      if (reserved_) {
        const WholeLanes onNodata = whole == nodataWhole_;
        uint64_t any[sizeof(onNodata) / sizeof(uint64_t)];
        std::memcpy(any, &onNodata, sizeof(any));
        if ((any[0] | any[1] | any[2] | any[3]) != 0) {
          const WholeLanes above = __builtin_convertvector(v > nodata_, WholeLanes);
          whole = onNodata ? (above ? none + up_ : none + down_) : whole;
        }
      }
      const auto values = __builtin_convertvector(whole, typename ComponentLanes<Out, 8>::type);
      std::memcpy(out, &values, sizeof(values));
    }
  }

 private:
  static constexpr double kLowest = static_cast<double>(std::numeric_limits<Out>::lowest());
  static constexpr double kHighest = static_cast<double>(std::numeric_limits<Out>::max());
  bool reserved_ = false;
  double nodata_ = 0;
  int32_t nodataWhole_ = 0, up_ = 0, down_ = 0;
};

// rebuildPixel's outputs from `first` on in groups of 8 × V, each group's sums in registers over
// the components; returns the first output left.
template <int V, class C, class Out>
[[gnu::always_inline]] inline int rebuildLanes(const C* __restrict components, int count,
                                               const double* __restrict restore,
                                               const double* __restrict offset, int first,
                                               int outputs, const LaneEncoder<Out>& encoder,
                                               Out* __restrict out) {
  int j = first;
  for (; j + 8 * V <= outputs; j += 8 * V) {
    DoubleLanes sum[V];
    std::memcpy(sum, offset + j, sizeof(sum));
    for (int k = 0; k < count; ++k) {
      const auto value = static_cast<double>(components[k]);
      const double* weights = restore + static_cast<size_t>(k) * outputs + j;
      for (int v = 0; v < V; ++v) {
        DoubleLanes w;
        std::memcpy(&w, weights + static_cast<size_t>(8) * v, sizeof(w));
        sum[v] += value * w;
      }
    }
    for (int v = 0; v < V; ++v) encoder.store(sum[v], out + j + 8 * v);
  }
  return j;
}

// out[j] = toSample(offset[j] + Σ_k components[k] · restore[k][j]), the sum in float64 over the
// components in order: in registers, 32 then 8 outputs at a time (kEncodesLanes types), the rest
// in `row`, then encoded (Rounding.h's two steps, each a vector loop).
template <class C, class Out>
HYPERSTREAM_VECTOR_CLONES void rebuildPixel(const C* __restrict components, int count,
                                            const double* __restrict restore,
                                            const double* __restrict offset, double* __restrict row,
                                            int outputs, double nodata, bool avoidNodata,
                                            Out* __restrict out) {
  int first = 0;
  if constexpr (kEncodesLanes<Out>) {
    const LaneEncoder<Out> encoder(nodata, avoidNodata);
    first = rebuildLanes<4>(components, count, restore, offset, 0, outputs, encoder, out);
    first = rebuildLanes<1>(components, count, restore, offset, first, outputs, encoder, out);
  }
  const int rest = outputs - first;
  for (int j = 0; j < rest; ++j) row[j] = offset[first + j];
  for (int k = 0; k < count; ++k) {
    const double value = static_cast<double>(components[k]);
    const double* weights = restore + static_cast<size_t>(k) * outputs + first;
    for (int j = 0; j < rest; ++j) row[j] += value * weights[j];
  }
  for (int j = 0; j < rest; ++j) row[j] = clampForRounding<Out>(row[j]);
  for (int j = 0; j < rest; ++j) out[first + j] = roundClamped<Out>(row[j], nodata, avoidNodata);
}

// A Projection as the CPU kernels take it: the weights in blocks of kComponentBlock components in
// precision C, zero-padded ([block][band][slot]); for integer samples the rounded centre as an
// integer shift, and the remainder's projection as a bias. The components are ordered by the
// first band they weigh (a stable sort: PCA's and RX's keep their order), so that a block skips
// the bands before its first: ACE's target filters weigh every band and go first (after the
// whitened components they would make the last block run over every band).
template <class T, class C>
struct KernelProjection {
  KernelProjection(const Projection& projection, int bandCount)
      : bands(bandCount),
        components(projection.components),
        componentBlocks((components + kComponentBlock - 1) / kComponentBlock),
        weights(static_cast<size_t>(componentBlocks) * bands * kComponentBlock, C(0)),
        bias(static_cast<size_t>(componentBlocks) * kComponentBlock, C(0)),
        columns(static_cast<size_t>(componentBlocks) * kComponentBlock, 0),
        firstBands(static_cast<size_t>(componentBlocks) * kComponentBlock, bandCount),
        shift(bands),
        center(projection.center.data()) {
    std::vector<int> lead(components, bands);
    for (int k = 0; k < components; ++k)
      for (int b = bands - 1; b >= 0; --b)
        if (weight(projection, b, k) != 0) lead[k] = b;
    for (int k = 0; k < components; ++k) columns[k] = k;
    std::stable_sort(columns.begin(), columns.begin() + components,
                     [&](int a, int b) { return lead[a] < lead[b]; });
    for (int slot = 0; slot < components; ++slot)
      for (int b = 0; b < bands; ++b)
        weights[(static_cast<size_t>(slot / kComponentBlock) * bands + b) * kComponentBlock +
                slot % kComponentBlock] = static_cast<C>(weight(projection, b, columns[slot]));
    // Adding the zero products of a component's leading bands changes no bit: they are skipped.
    for (int slot = 0; slot < components; ++slot) firstBands[slot] = lead[columns[slot]];
    if constexpr (std::is_integral_v<T>) {
      for (int b = 0; b < bands; ++b)
        shift[b] = static_cast<ShiftInteger<T>>(std::llround(center[b]));
      for (int slot = 0; slot < components; ++slot) {
        double sum = 0;
        for (int b = 0; b < bands; ++b)
          sum += (center[b] - static_cast<double>(shift[b])) * weight(projection, b, columns[slot]);
        bias[slot] = static_cast<C>(sum);
      }
    }
  }
  static double weight(const Projection& projection, int b, int k) {
    return projection.weights[static_cast<size_t>(b) * projection.components + k];
  }
  WeightBlock<C> block(int index) const {
    const size_t first = static_cast<size_t>(index) * kComponentBlock;
    return {weights.data() + first * bands,
            bias.data() + first,
            columns.data() + first,
            firstBands.data() + first,
            firstBands[first],
            std::min(kComponentBlock, components - index * kComponentBlock)};
  }
  Centring<T> centring() const { return {shift.data(), center}; }

  int bands, components, componentBlocks;
  CacheLineVector<C> weights;   // by block, band and slot: each band's slots a cache line
  std::vector<C> bias;          // by slot
  std::vector<int> columns;     // the component (output column) of each slot
  std::vector<int> firstBands;  // by slot: the first band with a weight other than 0
  std::vector<ShiftInteger<T>> shift;
  const double* center;
};

}  // namespace
}  // namespace hyperstream
