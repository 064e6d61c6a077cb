// PCA's kernels on every CPU core: moments of integer pixels exactly with AVX-512 VNNI
// (IntegerMoments), of other pixels with OpenBLAS's DSYRK; the projection in plain vector loops
// on the kernels' worker threads (a GEMM with ten columns spends its time packing the pixels).

#include "core/BlasThreads.h"
#include "core/CacheLineVector.h"
#include "core/Error.h"
#include "core/Rounding.h"
#include "core/Samples.h"
#include "core/WorkerThreads.h"
#include "projection/PcaKernels.h"
#include "stats/IntegerMoments.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace hyperstream {

int64_t groupRows(int64_t width) {
  constexpr int64_t kGroupPixels = 1024;  // DSYRK with k >= 1024 runs at its full rate
  return std::max<int64_t>(1, (kGroupPixels + width - 1) / std::max<int64_t>(1, width));
}

namespace {

// Pixels per DSYRK call of the float64 moments: the converted block stays in the cache.
constexpr int64_t kChunkPixels = 1024;
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

class CpuPcaKernels : public PcaKernels {
 public:
  explicit CpuPcaKernels(bool wideVectors)
      : wideVectors_(wideVectors),
        workers_(threads_.count()),
        integer_(IntegerMoments::supported() ? workers_ : 0),
        floatBuffers_(workers_),
        doubleBuffers_(workers_) {}
  CpuPcaKernels(const CpuPcaKernels&) = delete;
  CpuPcaKernels& operator=(const CpuPcaKernels&) = delete;

  std::string name() const override {
    return "cpu (" + std::to_string(workers_) + " threads" +
           (integer_.empty() || !integerInput_ ? std::string()
                                               : ", exact AVX-512 VNNI integer moments") +
           ", OpenBLAS " + openblas_get_corename() + " kernels)";
  }

  bool usesEveryCore() const override { return true; }

  std::string advice() const override {
    // OpenBLAS falls back to its generic kernels on CPUs newer than its release; they run 3-4x
    // slower than the AVX2/AVX-512 ones the CPU can use.
    const std::string core = openblas_get_corename();
    if ((core == "Prescott" || core == "Core2" || core == "Nehalem") &&
        __builtin_cpu_supports("avx2"))
      return "OpenBLAS does not recognise this CPU and runs its generic " + core +
             " kernels; setting OPENBLAS_CORETYPE=Haswell (or SkylakeX on AVX-512 CPUs) in the "
             "environment before starting makes its float64 kernels (the moments of "
             "floating-point rasters, and of any raster on CPUs without AVX-512 VNNI) 3-4x faster";
    return {};
  }

  bool prepare(const CubeLayout& layout) override {
    total_ = Moments(layout.bands);
    exactSignal_.clear();
    integerInput_ = layout.type != SampleType::Float32 && layout.type != SampleType::Float64;
    return false;
  }

  // MNF's noise from the strips themselves, packed straight into the exact integer moments' band
  // rows, for samples of at most 16 bits on CPUs with AVX-512 VNNI; else the job differences the
  // strips.
  bool takesNoise(SampleType type) const override {
    return !integer_.empty() && type != SampleType::Float32 && type != SampleType::Float64 &&
           sampleSize(type) <= 2;
  }

  void prepareNoise(int rowStep, int columnStep, int64_t width) override {
    noise_ = NoiseShape{rowStep, columnStep, width};
    noiseTotal_ = Moments(total_.bands);
    exactNoise_.clear();
    hasAbove_ = false;
  }

  void setNoiseRowAbove(const StripView& row) override {
    withSampleType(row.type, [&](auto sample) {
      using T = decltype(sample);
      if constexpr (std::is_integral_v<T> && sizeof(T) <= 2) {
        markValid<T>(row);
        keepRowAbove<T>(row, 0);
      }
    });
  }

  Moments takeNoiseMoments(int bands) override {
    Moments result = takeExact(exactNoise_, noiseTotal_, bands);
    noiseTotal_ = Moments(bands);
    return result;
  }

  bool takesBandMajor() const override { return true; }

  void accumulateMoments(const StripView& strip) override {
    if (total_.bands != strip.bands) total_ = Moments(strip.bands);
    withSampleType(strip.type, [&](auto sample) { accumulate<decltype(sample)>(strip, total_); });
  }

  Moments takeMoments(int bands) override {
    Moments result = takeExact(exactSignal_, total_, bands);
    total_ = Moments(bands);
    return result;
  }

  ComponentRange componentRange(const StripView& strip, const Projection& projection) override {
    ComponentRange range;
    range.minimum.assign(projection.components, std::numeric_limits<double>::infinity());
    range.maximum.assign(projection.components, -std::numeric_limits<double>::infinity());
    withSampleType(strip.type, [&](auto sample) {
      forEachProjectedChunk<decltype(sample), float>(
          strip, projection, [&](int64_t first, int64_t count, const float* values) {
            for (int64_t p = 0; p < count; ++p) {
              if (!valid_[first + p]) continue;
              const float* pixel = values + p * projection.components;
              for (int k = 0; k < projection.components; ++k) {
                range.minimum[k] = std::min(range.minimum[k], static_cast<double>(pixel[k]));
                range.maximum[k] = std::max(range.maximum[k], static_cast<double>(pixel[k]));
              }
            }
          });
    });
    return range;
  }

  void project(const StripView& strip, const Projection& projection, const OutputEncoding& encoding,
               void* output) override {
    withSampleType(strip.type, [&](auto sample) {
      withOutputType(encoding.type, [&](auto outputSample) {
        using Out = decltype(outputSample);
        if (projectsInFloat(projection, encoding))
          projectInto<decltype(sample), float>(strip, projection, encoding,
                                               static_cast<Out*>(output));
        else
          projectInto<decltype(sample), double>(strip, projection, encoding,
                                                static_cast<Out*>(output));
      });
    });
  }

 private:
  template <class T>
  void accumulate(const StripView& strip, Moments& total) {
    markValid<T>(strip);
    const int64_t group = strip.groupPixels > 0 ? strip.groupPixels : strip.pixels;
    if constexpr (std::is_integral_v<T> && sizeof(T) <= 4) {
      if (!integer_.empty()) {
        accumulateExactly<T>(strip, group, total);
        if constexpr (sizeof(T) <= 2)
          if (noise_.width > 0) accumulateNoise<T>(strip, group / noise_.width);
        return;
      }
    }
    for (int64_t first = 0; first < strip.pixels; first += group)
      total.merge(groupMoments<T>(strip, first, std::min(group, strip.pixels - first)));
  }

  // Integer samples: the groups go to the worker threads' exact sums (see addGroups).
  template <class T>
  void accumulateExactly(const StripView& strip, int64_t group, Moments& total) {
    const T* data = static_cast<const T*>(strip.data);
    const SampleLayout layout = strip.layout();
    const int64_t groups = (strip.pixels + group - 1) / group;
    const auto count = [&](int64_t g) { return std::min(group, strip.pixels - g * group); };
    startExactSums(
        groups,
        [&](int64_t g) {
          return integer_[0].shiftFor(data + g * group * layout.pixelStep, layout,
                                      valid_.data() + g * group, count(g), strip.bands);
        },
        strip.bands, exactSignal_);
    if (exactSignal_.empty()) return;  // no valid pixel yet
    addGroups(
        groups,
        [&](int worker, int64_t g) {
          return integer_[worker].add(data + g * group * layout.pixelStep, layout,
                                      valid_.data() + g * group, count(g), strip.bands,
                                      exactSignal_[worker]);
        },
        [&](int worker, int64_t g, Moments& result) {
          return integer_[worker].compute(data + g * group * layout.pixelStep, layout,
                                          valid_.data() + g * group, count(g), strip.bands, result);
        },
        [&](int64_t g) { return groupMoments<T>(strip, g * group, count(g)); }, total);
  }

  // Every worker's exact sums, about the shift of the pass's first group that has one
  // (shiftOf(g) is empty for a group without valid pixels), once a strip has such a group. The
  // shift does not depend on the strips or the threads, and neither do the exact sums.
  template <class ShiftOf>
  void startExactSums(int64_t groups, const ShiftOf& shiftOf, int bands,
                      std::vector<ExactSums>& sums) {
    for (int64_t g = 0; g < groups && sums.empty(); ++g) {
      std::vector<int64_t> shift = shiftOf(g);
      if (!shift.empty()) sums.assign(workers_, ExactSums(bands, std::move(shift)));
    }
  }

  // Groups [0, groups), each to the next free worker thread: add(worker, g) adds it to the
  // worker's exact sums, or returns false where they cannot take it (values too far from their
  // shift); then own(worker, g, result) makes its moments about a shift of its own, or returns
  // false, and fallback(g) makes them on this thread. Those groups are merged into `rest` in group
  // order, so that nothing depends on the thread count.
  template <class Add, class Own, class Fallback>
  void addGroups(int64_t groups, const Add& add, const Own& own, const Fallback& fallback,
                 Moments& rest) {
    enum : unsigned char { kAdded, kOwn, kRefused };
    // Kept between strips: the moments of groups taken about their own shift (bands x bands each).
    std::vector<Moments>& results = groupResults_;
    if (static_cast<int64_t>(results.size()) < groups) results.resize(groups);
    groupState_.assign(groups, kAdded);
    std::atomic<int64_t> next{0};
    threads_.onEach([&](int worker) {
      for (int64_t g = next++; g < groups; g = next++)
        if (!add(worker, g)) groupState_[g] = own(worker, g, results[g]) ? kOwn : kRefused;
    });
    const BlasThreadsHere oneThread(1);  // the refused groups' small DSYRKs
    for (int64_t g = 0; g < groups; ++g) {
      if (groupState_[g] == kOwn) rest.merge(results[g]);
      if (groupState_[g] == kRefused) rest.merge(fallback(g));
    }
  }

  // The workers' exact sums, added and rounded, then the groups they refused (`rest`); both reset.
  static Moments takeExact(std::vector<ExactSums>& sums, Moments& rest, int bands) {
    Moments result(bands);
    if (!sums.empty()) {
      for (size_t w = 1; w < sums.size(); ++w) sums[0].add(sums[w]);
      result = sums[0].moments();
      sums.clear();
    }
    if (rest.bands == bands) result.merge(rest);
    return result;
  }

  // MNF's noise: the differences x(r - rowStep, c - columnStep) - x(r, c) over valid pairs, a
  // pair counted at its second pixel (as NoiseDifferences makes them), group by group of rows as
  // the signal; groups whose differences spread past 16 bits go through float64 DSYRK.
  template <class T>
  void accumulateNoise(const StripView& strip, int64_t rowsPerGroup) {
    const NoiseShape& shape = noise_;
    const int64_t width = shape.width, rows = strip.pixels / width;
    const int64_t first = shape.columnStep > 0 ? shape.columnStep : 0;
    const int64_t pairs = width - std::abs(shape.columnStep);
    const T* data = static_cast<const T*>(strip.data);
    const T* above = reinterpret_cast<const T*>(above_.data());
    const SampleLayout layout = strip.layout();
    const SampleLayout aboveLayout = strip.bandMajor ? SampleLayout::bandMajor(width)
                                                     : SampleLayout::pixelInterleaved(strip.bands);
    paired_.resize(static_cast<size_t>(rows * pairs));
    std::vector<DifferenceRow<T>> differenceRows(rows);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t partnerRow = r - shape.rowStep;
      unsigned char* paired = paired_.data() + r * pairs;
      DifferenceRow<T>& row = differenceRows[r];
      row.pixel = data + (r * width + first) * layout.pixelStep;
      row.pixelLayout = layout;
      row.paired = paired;
      const unsigned char* partnerValid = nullptr;
      if (partnerRow >= 0) {
        row.partner = data + (partnerRow * width + first - shape.columnStep) * layout.pixelStep;
        row.partnerLayout = layout;
        partnerValid = valid_.data() + partnerRow * width + first - shape.columnStep;
      } else if (hasAbove_) {
        row.partner = above + (first - shape.columnStep) * aboveLayout.pixelStep;
        row.partnerLayout = aboveLayout;
        partnerValid = aboveValid_.data() + first - shape.columnStep;
      } else {
        row.partner = row.pixel;  // the image's first row: no pairs
        row.partnerLayout = layout;
      }
      const unsigned char* valid = valid_.data() + r * width + first;
      for (int64_t c = 0; c < pairs; ++c) paired[c] = partnerValid ? valid[c] & partnerValid[c] : 0;
    }
    const int64_t groups = (rows + rowsPerGroup - 1) / rowsPerGroup;
    const DifferenceRow<T>* rowsOf = differenceRows.data();
    const auto count = [&](int64_t g) { return std::min(rowsPerGroup, rows - g * rowsPerGroup); };
    startExactSums(
        groups,
        [&](int64_t g) {
          return integer_[0].differenceShiftFor(rowsOf + g * rowsPerGroup, count(g), pairs,
                                                strip.bands);
        },
        strip.bands, exactNoise_);
    if (!exactNoise_.empty())
      addGroups(
          groups,
          [&](int worker, int64_t g) {
            return integer_[worker].addDifferences(rowsOf + g * rowsPerGroup, count(g), pairs,
                                                   strip.bands, exactNoise_[worker]);
          },
          [&](int worker, int64_t g, Moments& result) {
            return integer_[worker].computeDifferences(rowsOf + g * rowsPerGroup, count(g), pairs,
                                                       strip.bands, result);
          },
          [&](int64_t g) {
            return differenceMoments(rowsOf + g * rowsPerGroup, count(g), pairs, strip.bands);
          },
          noiseTotal_);
    keepRowAbove<T>(strip, rows - 1);
  }

  // The strip's row `row` and its validity, as the row above the next strip.
  template <class T>
  void keepRowAbove(const StripView& strip, int64_t row) {
    const int64_t width = noise_.width;
    const T* data = static_cast<const T*>(strip.data);
    above_.resize(static_cast<size_t>(width * strip.bands) * sizeof(T));
    T* kept = reinterpret_cast<T*>(above_.data());
    if (strip.bandMajor) {
      for (int b = 0; b < strip.bands; ++b)
        std::copy_n(data + b * strip.pixels + row * width, width, kept + b * width);
    } else {
      std::copy_n(data + row * width * strip.bands, width * strip.bands, kept);
    }
    aboveValid_.assign(valid_.begin() + row * width, valid_.begin() + (row + 1) * width);
    hasAbove_ = true;
  }

  // Moments of the differences of `count` rows in float64 (DSYRK about the first difference):
  // for the rare groups whose differences do not fit the integer kernel.
  template <class T>
  static Moments differenceMoments(const DifferenceRow<T>* rows, int64_t count, int64_t pairs,
                                   int bands) {
    Moments result(bands);
    std::vector<double> shift(bands, 0.0), sum(bands, 0.0), block;
    int64_t filled = 0;
    auto flush = [&] {
      if (filled == 0) return;
      cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, bands, static_cast<int>(filled), 1.0,
                  block.data(), bands, 1.0, result.comoment.data(), bands);
      filled = 0;
    };
    block.resize(static_cast<size_t>(kChunkPixels) * bands);
    for (int64_t r = 0; r < count; ++r)
      for (int64_t c = 0; c < pairs; ++c) {
        if (!rows[r].paired[c]) continue;
        const DifferenceRow<T>& row = rows[r];
        double* out = block.data() + filled * bands;
        for (int b = 0; b < bands; ++b) {
          const double d =
              static_cast<double>(
                  row.partner[c * row.partnerLayout.pixelStep + b * row.partnerLayout.bandStep]) -
              static_cast<double>(
                  row.pixel[c * row.pixelLayout.pixelStep + b * row.pixelLayout.bandStep]);
          if (result.count == 0 && filled == 0) shift[b] = d;  // the first pair's
          out[b] = d - shift[b];
          sum[b] += out[b];
        }
        ++result.count;
        if (++filled == kChunkPixels) flush();
      }
    flush();
    if (result.count > 0) takeOutShift(shift, sum, result);
    return result;
  }

  // Moments of one group in one pass: each valid pixel, shifted by the group's first valid pixel
  // (close to the mean, so nothing cancels), goes into a float64 block; DSYRK adds the block's
  // co-moment. The shift is taken out exactly at the end.
  template <class T>
  Moments groupMoments(const StripView& strip, int64_t first, int64_t count) {
    const int bands = strip.bands;
    const T* data = static_cast<const T*>(strip.data);
    const SampleLayout layout = strip.layout();
    Moments result(bands);
    int64_t start = first;
    while (start < first + count && !valid_[start]) ++start;
    if (start == first + count) return result;
    std::vector<double>& shift = shift_;
    shift.assign(bands, 0.0);
    for (int b = 0; b < bands; ++b)
      shift[b] = static_cast<double>(data[start * layout.pixelStep + b * layout.bandStep]);
    std::vector<double>& sum = sum_;
    sum.assign(bands, 0.0);
    double* lo = result.minimum.data();
    double* hi = result.maximum.data();
    chunk_.resize(static_cast<size_t>(kChunkPixels) * bands);
    chunkPixels_.resize(kChunkPixels);
    double* block = chunk_.data();
    int64_t filled = 0;
    auto flush = [&] {
      if (filled == 0) return;
      if (!layout.isPixelInterleaved())
        for (int b = 0; b < bands; ++b)
          addShiftedBand(data + b * layout.bandStep, chunkPixels_.data(), filled, shift[b],
                         block + b, bands, &sum[b], &lo[b], &hi[b]);
      cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, bands, static_cast<int>(filled), 1.0,
                  block, bands, 1.0, result.comoment.data(), bands);
      filled = 0;
    };
    for (int64_t p = start; p < first + count; ++p) {
      if (!valid_[p]) continue;
      if (layout.isPixelInterleaved())
        addShiftedPixel(data + p * bands, shift.data(), block + filled * bands, sum.data(), lo, hi,
                        bands);
      else
        chunkPixels_[filled] = p;
      ++result.count;
      if (++filled == kChunkPixels) flush();
    }
    flush();
    takeOutShift(shift, sum, result);
    return result;
  }

  // Sum (x-s)(x-s)^T = M + n (m-s)(m-s)^T: the mean from the shift and the shifted sums, the
  // shift's share subtracted from the upper triangle of result.comoment, mirrored.
  static void takeOutShift(const std::vector<double>& shift, const std::vector<double>& sum,
                           Moments& result) {
    const int bands = result.bands;
    const auto n = static_cast<double>(result.count);
    for (int b = 0; b < bands; ++b) result.mean[b] = shift[b] + sum[b] / n;
    for (int i = 0; i < bands; ++i)
      for (int j = i; j < bands; ++j) {
        double& upper = result.comoment[static_cast<size_t>(i) * bands + j];
        upper -= sum[i] * sum[j] / n;
        result.comoment[static_cast<size_t>(j) * bands + i] = upper;
      }
  }

  // valid_[p] = whether pixel p of the strip is valid, on every worker thread.
  template <class T>
  void markValid(const StripView& strip) {
    valid_.resize(strip.pixels);
    const ValidPixel<T> isValid(strip.nodata, strip.bands);
    if (isValid.alwaysValid()) {
      std::fill(valid_.begin(), valid_.end(), 1);
      return;
    }
    const T* data = static_cast<const T*>(strip.data);
    if (strip.bandMajor) {
      threads_.split(strip.pixels, [&](int64_t first, int64_t last) {
        std::fill(valid_.begin() + first, valid_.begin() + last, 1);
        for (int b = 0; b < strip.bands; ++b)
          clearInvalidSamples(data + b * strip.pixels + first, last - first,
                              isValid.nodataValues()[b], isValid.hasNodata()[b] != 0,
                              valid_.data() + first);
      });
      return;
    }
    threads_.split(strip.pixels, [&](int64_t first, int64_t last) {
      for (int64_t p = first; p < last; ++p) valid_[p] = isValid(data + p * strip.bands) ? 1 : 0;
    });
  }

  // Centres and projects the strip in precision C on every worker thread, calling
  // consume(firstPixel, pixelCount, values) with pixelCount x components values per batch.
  // Invalid pixels are projected as if they were at the centre; consumers skip them.
  template <class T, class C, class Consume>
  void forEachProjectedChunk(const StripView& strip, const Projection& projection,
                             Consume&& consume) {
    markValid<T>(strip);
    const KernelProjection<T, C> kernel(projection, strip.bands);
    std::vector<C>& result = buffers<C>(0).result;
    const int64_t batchPixels = kBatchPixelsPerWorker * workers_;
    for (int64_t batchFirst = 0; batchFirst < strip.pixels; batchFirst += batchPixels) {
      const int64_t batch = std::min(batchPixels, strip.pixels - batchFirst);
      result.resize(static_cast<size_t>(batch) * projection.components);
      threads_.onEach([&](int worker) {
        const int64_t end = batchFirst + batch * (worker + 1) / workers_;
        for (int64_t first = batchFirst + batch * worker / workers_; first < end;
             first += kProjectBlockPixels)
          projectPixels(strip, kernel, first, std::min(kProjectBlockPixels, end - first),
                        buffers<C>(worker).block,
                        result.data() + (first - batchFirst) * projection.components);
      });
      consume(batchFirst, batch, result.data());
    }
  }

  // The workers project the strip a block at a time, each taking the next block when done with
  // one (a worker slowed by another thread on its core takes fewer), and call consume(first
  // pixel, pixels, values, worker) on it at once. A pixel's values do not depend on its block.
  template <class T, class C, class Consume>
  void forEachProjectedBlock(const StripView& strip, const Projection& projection,
                             Consume&& consume) {
    markValid<T>(strip);
    const KernelProjection<T, C> kernel(projection, strip.bands);
    std::atomic<int64_t> next{0};
    threads_.onEach([&](int worker) {
      ProjectionBuffers<C>& mine = buffers<C>(worker);
      mine.result.resize(static_cast<size_t>(kProjectBlockPixels) * projection.components);
      for (int64_t first = next.fetch_add(kProjectBlockPixels); first < strip.pixels;
           first = next.fetch_add(kProjectBlockPixels)) {
        const int64_t count = std::min(kProjectBlockPixels, strip.pixels - first);
        projectPixels(strip, kernel, first, count, mine.block, mine.result.data());
        consume(first, count, mine.result.data(), worker);
      }
    });
  }

  // Projects pixels [first, first + count) of the strip into `out` (count x components) on one
  // worker thread, through a block of centred values that stays in the core's cache: band-major
  // strips' as centred bands (centreBands), pixel-interleaved ones' as centred pixels.
  template <class T, class C>
  void projectPixels(const StripView& strip, const KernelProjection<T, C>& kernel, int64_t first,
                     int64_t count, CacheLineVector<C>& block, C* out) const {
    const T* data = static_cast<const T*>(strip.data);
    const int bands = strip.bands;
    if (strip.bandMajor) {
      const int lanes = (wideVectors_ ? 64 : 32) / static_cast<int>(sizeof(C));
      const int64_t stride = (count + lanes - 1) / lanes * lanes;
      block.resize(static_cast<size_t>(stride) * bands);
      centreBands(data + first, strip.pixels, valid_.data() + first, count, bands,
                  kernel.centring(), stride, block.data());
      const auto project =
          wideVectors_ ? projectBands<C, 64 / sizeof(C)> : projectBands<C, 32 / sizeof(C)>;
      for (int kb = 0; kb < kernel.componentBlocks; ++kb)
        project(block.data(), stride, count, bands, kernel.block(kb), out, kernel.components);
      return;
    }
    block.resize(static_cast<size_t>(kProjectBlockPixels) * bands);
    for (int64_t p = 0; p < count; ++p) {
      C* row = block.data() + p * bands;
      if (!valid_[first + p])
        std::fill(row, row + bands, C(0));
      else if constexpr (std::is_integral_v<T>)
        shiftPixel(data + (first + p) * bands, kernel.shift.data(), row, bands);
      else
        centrePixel(data + (first + p) * bands, kernel.center, row, bands);
    }
    const auto project =
        wideVectors_ ? projectBlock<C, 64 / sizeof(C)> : projectBlock<C, 32 / sizeof(C)>;
    for (int kb = 0; kb < kernel.componentBlocks; ++kb)
      project(block.data(), count, bands, kernel.block(kb), out, kernel.components);
  }

  // Projects in precision C, then encodes (or rebuilds or scores, and encodes) each block into
  // `output` on the worker that projected it, while its values are in the core's cache.
  template <class T, class C, class Out>
  void projectInto(const StripView& strip, const Projection& projection,
                   const OutputEncoding& encoding, Out* output) {
    forEachProjectedBlock<T, C>(
        strip, projection, [&](int64_t first, int64_t count, const C* values, int worker) {
          if (projection.rebuilds()) {
            rebuild(values, first, count, projection, encoding, buffers<C>(worker).row, output);
            return;
          }
          if constexpr (std::is_floating_point_v<Out>) {
            if (projection.scores.active()) {
              score(values, first, count, projection, encoding, output);
              return;
            }
          }
          // Float components as they are, Byte ones rescaled (other types only rebuild).
          if constexpr (std::is_floating_point_v<Out> || std::is_same_v<Out, uint8_t>)
            encode(values, first, count, projection.components, encoding, output);
        });
  }

  // Float components: the values as they are; nodata for invalid pixels.
  template <class C, class Out>
  void encode(const C* values, int64_t first, int64_t count, int components,
              const OutputEncoding& encoding, Out* output) const {
    static_assert(std::is_floating_point_v<Out>);
    for (int64_t p = 0; p < count; ++p) {
      Out* out = output + (first + p) * components;
      const C* in = values + p * components;
      if (valid_[first + p]) {
        for (int k = 0; k < components; ++k) out[k] = static_cast<Out>(in[k]);
      } else {
        std::fill(out, out + components, static_cast<Out>(encoding.nodata));
      }
    }
  }

  // Detection scores (DetectionScores) of `count` projected pixels, in float64.
  template <class C, class Out>
  void score(const C* values, int64_t first, int64_t count, const Projection& projection,
             const OutputEncoding& encoding, Out* output) const {
    const DetectionScores& rule = projection.scores;
    const int components = projection.components;
    const int outputs = projection.outputCount();
    for (int64_t p = 0; p < count; ++p) {
      Out* out = output + (first + p) * outputs;
      if (!valid_[first + p]) {
        std::fill(out, out + outputs, static_cast<Out>(encoding.nodata));
        continue;
      }
      const C* pixel = values + p * components;
      const double distance = sumOfSquares(pixel, rule.whitened);
      if (rule.targetPower.empty()) {
        out[0] = static_cast<Out>(distance);
        continue;
      }
      for (int t = 0; t < outputs; ++t) {
        const auto filtered = static_cast<double>(pixel[rule.whitened + t]);
        out[t] = static_cast<Out>(
            distance > 0 ? filtered * filtered * rule.targetPower[t] / distance : 0.0);
      }
    }
  }

  // Byte components: each rescaled from its range to the encoding's.
  template <class C>
  void encode(const C* values, int64_t first, int64_t count, int components,
              const OutputEncoding& encoding, uint8_t* output) const {
    for (int64_t p = 0; p < count; ++p) {
      uint8_t* out = output + (first + p) * components;
      const C* in = values + p * components;
      if (!valid_[first + p]) {
        std::fill(out, out + components, static_cast<uint8_t>(encoding.nodata));
        continue;
      }
      for (int k = 0; k < components; ++k) {
        const double scaled =
            encoding.byteLow +
            (static_cast<double>(in[k]) - encoding.byteMinimum[k]) * encoding.byteScale[k];
        out[k] = static_cast<uint8_t>(std::clamp(std::round(scaled), 0.0, 255.0));
      }
    }
  }

  // Rebuilt values of `count` projected pixels, in float64, encoded by toSample (`row`: a pixel's
  // float64 values).
  template <class C, class Out>
  void rebuild(const C* values, int64_t first, int64_t count, const Projection& projection,
               const OutputEncoding& encoding, std::vector<double>& row, Out* output) const {
    const int outputs = projection.outputs;
    const int components = projection.components;
    row.resize(static_cast<size_t>(outputs));
    for (int64_t p = 0; p < count; ++p) {
      Out* out = output + (first + p) * outputs;
      if (!valid_[first + p]) {
        std::fill(out, out + outputs, static_cast<Out>(encoding.nodata));
        continue;
      }
      rebuildPixel(values + p * components, components, projection.restore.data(),
                   projection.offset.data(), row.data(), outputs, encoding.nodata,
                   encoding.avoidNodata, out);
    }
  }

  // Per worker thread: the centred block, the projected block (worker 0's: the projected batch
  // of forEachProjectedChunk) and a rebuilt pixel.
  template <class C>
  struct ProjectionBuffers {
    CacheLineVector<C> block;  // band-major blocks load whole vectors of pixels from it
    std::vector<C> result;
    std::vector<double> row;
  };
  template <class C>
  ProjectionBuffers<C>& buffers(int worker) {
    if constexpr (std::is_same_v<C, double>)
      return doubleBuffers_[worker];
    else
      return floatBuffers_[worker];
  }

  bool wideVectors_;  // 64-byte vectors in the projection (AVX-512), else 32-byte ones
  WorkerThreads threads_;
  int workers_;                          // threads_.count()
  std::vector<IntegerMoments> integer_;  // one per worker thread; empty without AVX-512 VNNI
  bool integerInput_ = true;             // the cube prepared for has an integer type
  struct NoiseShape {
    int rowStep = 0, columnStep = 0;
    int64_t width = 0;  // 0: no noise taken
  };
  NoiseShape noise_;
  Moments noiseTotal_;
  std::vector<unsigned char> paired_;
  std::vector<unsigned char> above_, aboveValid_;  // the row above the next strip
  bool hasAbove_ = false;
  std::vector<Moments> groupResults_;
  std::vector<unsigned char> groupState_;  // addGroups: how each group of the strip was taken
  // Integer samples: each worker's exact sums of the signal and of MNF's noise (not started until
  // the first valid pixel); groups they refused are merged into total_ and noiseTotal_.
  std::vector<ExactSums> exactSignal_, exactNoise_;
  Moments total_;
  std::vector<unsigned char> valid_;
  std::vector<double> shift_, sum_;
  std::vector<double> chunk_;
  std::vector<int64_t> chunkPixels_;  // the valid pixels of chunk_ (band-major strips)
  std::vector<ProjectionBuffers<float>> floatBuffers_;
  std::vector<ProjectionBuffers<double>> doubleBuffers_;
};

}  // namespace

std::unique_ptr<PcaKernels> makeCpuPcaKernels() {
  return makeCpuPcaKernels(wideVectors());
}

std::unique_ptr<PcaKernels> makeCpuPcaKernels(bool wideVectors) {
  return std::make_unique<CpuPcaKernels>(wideVectors);
}

}  // namespace hyperstream
