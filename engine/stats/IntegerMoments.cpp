// Exact sums of integer samples with AVX-512 VNNI (stats/IntegerMoments.h): the packing of pixel-
// and band-interleaved strips, of MNF's differences, and the dot-product kernels over them. One
// file, about 750 lines, as every layout's packing must match the one kernel that reads it.

#include "stats/IntegerMoments.h"

#include "core/Samples.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace hyperstream {

namespace {

constexpr int kRowBlock = 32;     // co-moment rows per block: two 16-lane registers
constexpr int kColumnBlock = 12;  // co-moment columns per block: 24 accumulators
// Fewer pixel pairs than this between flushes (values spread over most of the 16 bits) would make
// flushing cost more than float64 DSYRK.
constexpr int64_t kMinFlushSteps = 16;
// Pixels whose mean is the shift: a sample is enough to centre the deviations.
constexpr int64_t kShiftSample = 32;

// Band-major samples: the co-moment tiles are 4 x 6 bands (24 accumulators), and each
// takes at most kBandChunk vectors of pairs between widenings, so that a chunk of every band's
// packed row stays in the core's cache while the tiles pass over it.
constexpr int kTileRows = 4;
constexpr int kTileColumns = 6;
constexpr int64_t kBandChunk = 32;
constexpr int kPairsPerVector = 16;
// Band-major samples with gaps are packed run by run of valid pixels where the runs are this long
// on average, else one pixel at a time.
constexpr int64_t kShortestMeanRun = 16;

int roundUp(int value, int multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// Words per packed row: the bands, the column of ones, padding for the kernel's whole blocks.
int packedStride(int bands) {
  return roundUp(bands + 1, kRowBlock) + 16;
}

// One packed row: per band the deviations of two pixels from `shift`, as the low and high 16
// bits of a word (the pair layout VPDPWSSD multiplies), and the pixels' values added to the
// band ranges. `second` may be null: a zero deviation adds nothing.
template <class T>
HYPERSTREAM_VECTOR_CLONES void packPair(const T* __restrict first, const T* __restrict second,
                                        const int32_t* __restrict shift, int32_t* __restrict row,
                                        T* __restrict lo, T* __restrict hi, int bands) {
  const T* other = second ? second : first;
  const uint32_t secondMask = second ? 0xFFFF0000U : 0U;
  for (int b = 0; b < bands; ++b) {
    const T x = first[b];
    const T y = other[b];
    const T smaller = x < y ? x : y;
    const T larger = x < y ? y : x;
    lo[b] = smaller < lo[b] ? smaller : lo[b];
    hi[b] = larger > hi[b] ? larger : hi[b];
    // Only the low 16 bits of each difference are kept, so 32-bit wrap-around does no harm.
    const auto low = (static_cast<uint32_t>(x) - static_cast<uint32_t>(shift[b])) & 0xFFFFU;
    const auto high =
        ((static_cast<uint32_t>(y) - static_cast<uint32_t>(shift[b])) << 16) & secondMask;
    row[b] = static_cast<int32_t>(low | high);
  }
}

// One band's packed row from band-major samples: sample i's deviation from `shift` (its low 16
// bits) as half i of the row, so that word t pairs samples 2t and 2t + 1 in its low and high
// halves as VPDPWSSD multiplies them; the samples are added to the band's range.
template <class T>
HYPERSTREAM_VECTOR_CLONES void packBand(const T* __restrict band, int64_t count, uint32_t shift,
                                        T* __restrict lo, T* __restrict hi,
                                        uint16_t* __restrict halves) {
  T smallest = *lo;
  T largest = *hi;
  for (int64_t i = 0; i < count; ++i) {
    const T x = band[i];
    smallest = x < smallest ? x : smallest;
    largest = x > largest ? x : largest;
    halves[i] = static_cast<uint16_t>(static_cast<uint32_t>(x) - shift);
  }
  *lo = smallest;
  *hi = largest;
}

// packBand for pixels with gaps: the samples at `offsets`. (The range kept in registers: through
// the pointers, stored at every sample, it took 12 times packBand's time.)
template <class T>
HYPERSTREAM_VECTOR_CLONES void packBandAt(const T* __restrict band,
                                          const int64_t* __restrict offsets, int64_t count,
                                          uint32_t shift, T* __restrict lo, T* __restrict hi,
                                          uint16_t* __restrict halves) {
  T smallest = *lo;
  T largest = *hi;
  for (int64_t i = 0; i < count; ++i) {
    const T x = band[offsets[i]];
    smallest = x < smallest ? x : smallest;
    largest = x > largest ? x : largest;
    halves[i] = static_cast<uint16_t>(static_cast<uint32_t>(x) - shift);
  }
  *lo = smallest;
  *hi = largest;
}

// One band's differences partner[i] - pixel[i] of `count` contiguous pairs, as packBand packs
// samples; the differences are added to the band's range.
template <class T>
HYPERSTREAM_VECTOR_CLONES void packBandDifferences(const T* __restrict partner,
                                                   const T* __restrict pixel, int64_t count,
                                                   int32_t shift, int32_t* lo, int32_t* hi,
                                                   uint16_t* __restrict halves) {
  int32_t smallest = *lo;
  int32_t largest = *hi;
  for (int64_t i = 0; i < count; ++i) {
    const int32_t d = static_cast<int32_t>(partner[i]) - static_cast<int32_t>(pixel[i]);
    smallest = d < smallest ? d : smallest;
    largest = d > largest ? d : largest;
    halves[i] = static_cast<uint16_t>(static_cast<uint32_t>(d - shift));
  }
  *lo = smallest;
  *hi = largest;
}

// packBandDifferences for the pairs at `columns` only.
template <class T>
void packListedDifferences(const T* partner, const T* pixel, const int64_t* columns, int64_t count,
                           int32_t shift, int32_t* lo, int32_t* hi, uint16_t* halves) {
  int32_t smallest = *lo;
  int32_t largest = *hi;
  for (int64_t i = 0; i < count; ++i) {
    const int32_t d =
        static_cast<int32_t>(partner[columns[i]]) - static_cast<int32_t>(pixel[columns[i]]);
    smallest = std::min(smallest, d);
    largest = std::max(largest, d);
    halves[i] = static_cast<uint16_t>(static_cast<uint32_t>(d - shift));
  }
  *lo = smallest;
  *hi = largest;
}

// packPair for differences of pixel-interleaved pairs: per band, the deviations from `shift` of
// the differences partner - pixel of the first pair (low half) and the second (high half; none
// when `second` is false), added to the band ranges.
template <class T>
HYPERSTREAM_VECTOR_CLONES void packDifferencePair(const T* __restrict firstPartner,
                                                  const T* __restrict firstPixel,
                                                  const T* __restrict secondPartner,
                                                  const T* __restrict secondPixel, bool second,
                                                  const int32_t* __restrict shift,
                                                  int32_t* __restrict row, int32_t* __restrict lo,
                                                  int32_t* __restrict hi, int bands) {
  const uint32_t secondMask = second ? 0xFFFF0000U : 0U;
  for (int b = 0; b < bands; ++b) {
    const int32_t x = static_cast<int32_t>(firstPartner[b]) - static_cast<int32_t>(firstPixel[b]);
    const int32_t y = static_cast<int32_t>(secondPartner[b]) - static_cast<int32_t>(secondPixel[b]);
    const int32_t smaller = x < y ? x : y;
    const int32_t larger = x < y ? y : x;
    lo[b] = smaller < lo[b] ? smaller : lo[b];
    hi[b] = larger > hi[b] ? larger : hi[b];
    const auto low = static_cast<uint32_t>(x - shift[b]) & 0xFFFFU;
    const auto high = (static_cast<uint32_t>(y - shift[b]) << 16) & secondMask;
    row[b] = static_cast<int32_t>(low | high);
  }
}

#define HYPERSTREAM_TARGET_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define HYPERSTREAM_ALWAYS_INLINE inline __attribute__((always_inline))

// total[c][q] (+)= the 32-bit lanes of `sums`, widened: 16 rows of one co-moment column.
HYPERSTREAM_TARGET_VNNI inline void widenInto(int64_t* column, __m512i sums, bool add) {
  // The zero-masked forms: the plain ones start from an undefined register, which GCC 12 warns
  // about.
  constexpr __mmask8 kAll = 0xFF;
  __m512i parts[2] = {
      _mm512_maskz_cvtepi32_epi64(kAll, _mm512_maskz_extracti64x4_epi64(0xF, sums, 0)),
      _mm512_maskz_cvtepi32_epi64(kAll, _mm512_maskz_extracti64x4_epi64(0xF, sums, 1))};
  if (add) {
    parts[0] = _mm512_add_epi64(parts[0], _mm512_loadu_si512(column));
    parts[1] = _mm512_add_epi64(parts[1], _mm512_loadu_si512(column + 8));
  }
  _mm512_storeu_si512(column, parts[0]);
  _mm512_storeu_si512(column + 8, parts[1]);
}

// Accumulators indexed only by constants (the folds below), so that GCC keeps every one in a
// register: indexed by a loop variable, it spills them to the stack.
template <size_t N>
using Accumulators = __m512i[N];
constexpr size_t kPairSums = size_t{2} * kColumnBlock;          // pairProductsBlock's
constexpr size_t kTileSums = size_t{kTileRows} * kTileColumns;  // bandProductsTile's
template <size_t... C>
using Columns = std::index_sequence<C...>;

// sums[r] += rows[r] · column (pairs of 16-bit halves), for each of the N rows.
template <size_t N, size_t... R>
HYPERSTREAM_TARGET_VNNI HYPERSTREAM_ALWAYS_INLINE void multiplyAdd(__m512i* sums,
                                                                   const __m512i (&rows)[N],
                                                                   __m512i column,
                                                                   std::index_sequence<R...>) {
  ((sums[R] = _mm512_dpwssd_epi32(sums[R], rows[R], column)), ...);
}

// One step of pairProductsBlock: the 32 rows a0:a1 times each column b[C], a column at a time
// (all broadcasts at once would not fit the registers).
template <size_t... C>
HYPERSTREAM_TARGET_VNNI HYPERSTREAM_ALWAYS_INLINE void pairStep(Accumulators<kPairSums>& sums,
                                                                const __m512i (&rows)[2],
                                                                const int32_t* b, Columns<C...>) {
  (multiplyAdd(sums + 2 * C, rows, _mm512_set1_epi32(b[C]), std::make_index_sequence<2>()), ...);
}

template <size_t... C>
HYPERSTREAM_TARGET_VNNI HYPERSTREAM_ALWAYS_INLINE void widenColumns(
    const Accumulators<kPairSums>& sums, int paddedRows, bool add, int64_t* out, Columns<C...>) {
  (widenInto(out + static_cast<int64_t>(C) * paddedRows, sums[2 * C], add), ...);
  (widenInto(out + static_cast<int64_t>(C) * paddedRows + 16, sums[2 * C + 1], add), ...);
}

// One 32 x 12 block of co-moment sums over the packed rows [t0, t1), kept in 24 registers.
HYPERSTREAM_TARGET_VNNI void pairProductsBlock(const int32_t* row, int64_t steps, int stride,
                                               int i0, int j0, int paddedRows, bool add,
                                               int64_t* out) {
  constexpr auto columns = std::make_index_sequence<kColumnBlock>();
  Accumulators<kPairSums> sums{};  // column c: rows 0-15, then rows 16-31
  for (int64_t t = 0; t < steps; ++t, row += stride) {
    const __m512i rows[2] = {_mm512_loadu_si512(row + i0), _mm512_loadu_si512(row + i0 + 16)};
    pairStep(sums, rows, row + j0, columns);
  }
  widenColumns(sums, paddedRows, add, out, columns);
}

// total[j][i] = Σ_t row_t[i] · row_t[j] over `steps` packed rows (both pixels of each pair), for
// rows i in blocks of 32 and columns j >= the block's first row: the upper triangle plus the
// lower half of the diagonal blocks. The 32-bit sums are widened into `total` every `flushSteps`
// steps, before any can overflow.
void pairProducts(const int32_t* rows, int64_t steps, int stride, int columns, int paddedRows,
                  int64_t flushSteps, int64_t* total) {
  for (int i0 = 0; i0 < columns; i0 += kRowBlock)
    for (int j0 = i0; j0 < columns; j0 += kColumnBlock)
      for (int64_t t0 = 0; t0 < steps; t0 += flushSteps)
        pairProductsBlock(rows + t0 * stride, std::min(flushSteps, steps - t0), stride, i0, j0,
                          paddedRows, t0 > 0, total + static_cast<int64_t>(j0) * paddedRows + i0);
}

// Σ of one 32-bit lane set, widened: the 16 lanes of `sums` added in 64 bits.
HYPERSTREAM_TARGET_VNNI inline int64_t laneTotal(__m512i sums) {
  constexpr __mmask8 kAll = 0xFF;
  alignas(64) int64_t lanes[8];
  _mm512_store_si512(
      lanes, _mm512_add_epi64(
                 _mm512_maskz_cvtepi32_epi64(kAll, _mm512_maskz_extracti64x4_epi64(0xF, sums, 0)),
                 _mm512_maskz_cvtepi32_epi64(kAll, _mm512_maskz_extracti64x4_epi64(0xF, sums, 1))));
  int64_t total = 0;
  for (const int64_t lane : lanes) total += lane;
  return total;
}

// One step of bandProductsTile: the 4 band rows' vectors times each column band's vector at b[C].
template <size_t... C>
HYPERSTREAM_TARGET_VNNI HYPERSTREAM_ALWAYS_INLINE void bandStep(Accumulators<kTileSums>& sums,
                                                                const __m512i (&rows)[kTileRows],
                                                                const uint16_t* b,
                                                                int64_t rowHalves, Columns<C...>) {
  (multiplyAdd(sums + kTileRows * C, rows, _mm512_loadu_si512(b + C * rowHalves),
               std::make_index_sequence<kTileRows>()),
   ...);
}

// total[j0 + c][i0 + r] += the lanes of sums[c * kTileRows + r], for every r and c.
template <size_t... S>
HYPERSTREAM_TARGET_VNNI HYPERSTREAM_ALWAYS_INLINE void addTile(const Accumulators<kTileSums>& sums,
                                                               int i0, int j0, int paddedRows,
                                                               int64_t* total,
                                                               std::index_sequence<S...>) {
  ((total[static_cast<int64_t>(j0 + S / kTileRows) * paddedRows + i0 + S % kTileRows] +=
    laneTotal(sums[S])),
   ...);
}

// total[j][i] += Σ_t rows[i][t] · rows[j][t] (both halves of each word) over vectors [v0, v1) of
// the band rows i0..i0+3 and j0..j0+5, `stride` words apart.
HYPERSTREAM_TARGET_VNNI void bandProductsTile(const uint16_t* rows, int64_t stride, int64_t v0,
                                              int64_t v1, int i0, int j0, int paddedRows,
                                              int64_t* total) {
  Accumulators<kTileSums> sums{};  // column band c: rows 0-3
  // Offsets in halves: a word (a pair) is two of them.
  const int64_t rowHalves = 2 * stride;
  const uint16_t* a = rows + i0 * rowHalves;
  const uint16_t* b = rows + j0 * rowHalves;
  for (int64_t v = 2 * v0 * kPairsPerVector; v < 2 * v1 * kPairsPerVector;
       v += int64_t{2} * kPairsPerVector) {
    const __m512i tileRows[kTileRows] = {
        _mm512_loadu_si512(a + v), _mm512_loadu_si512(a + rowHalves + v),
        _mm512_loadu_si512(a + 2 * rowHalves + v), _mm512_loadu_si512(a + 3 * rowHalves + v)};
    bandStep(sums, tileRows, b + v, rowHalves, std::make_index_sequence<kTileColumns>());
  }
  addTile(sums, i0, j0, paddedRows, total, std::make_index_sequence<kTileSums>());
}

// pairProducts for band rows (each band's pairs together, `stride` words apart, `vectors` vectors
// of them, zero-padded): the upper triangle of tiles, `flushVectors` vectors at most between
// widenings, a chunk of vectors through every tile at a time.
void bandProducts(const uint16_t* rows, int64_t stride, int64_t vectors, int columns,
                  int paddedRows, int64_t flushVectors, int64_t* total) {
  std::fill(total, total + static_cast<int64_t>(columns + kTileColumns) * paddedRows, 0);
  const int64_t chunk = std::min(kBandChunk, flushVectors);
  for (int64_t v0 = 0; v0 < vectors; v0 += chunk)
    for (int i0 = 0; i0 < columns; i0 += kTileRows)
      for (int j0 = i0; j0 < columns; j0 += kTileColumns)
        bandProductsTile(rows, stride, v0, std::min(vectors, v0 + chunk), i0, j0, paddedRows,
                         total);
}

}  // namespace

ExactSums::ExactSums(int bands, std::vector<int64_t> shift)
    : bands_(bands),
      shift_(std::move(shift)),
      products_(at(0, bands + 1), 0),
      minimum_(bands, std::numeric_limits<double>::infinity()),
      maximum_(bands, -std::numeric_limits<double>::infinity()) {}

void ExactSums::add(const ExactSums& other) {
  for (size_t k = 0; k < products_.size(); ++k) products_[k] += other.products_[k];
  count_ += other.count_;
  for (int b = 0; b < bands_; ++b) {
    minimum_[b] = std::min(minimum_[b], other.minimum_[b]);
    maximum_[b] = std::max(maximum_[b], other.maximum_[b]);
  }
}

void ExactSums::addProducts(const int64_t* total, int paddedRows, int64_t count, const double* lo,
                            const double* hi) {
  for (int j = 0; j <= bands_; ++j) {
    const int64_t* column = total + static_cast<int64_t>(j) * paddedRows;
    __int128* sums = products_.data() + at(0, j);
    for (int i = 0; i <= j; ++i) sums[i] += column[i];
  }
  count_ += count;
  for (int b = 0; b < bands_; ++b) {
    minimum_[b] = std::min(minimum_[b], lo[b]);
    maximum_[b] = std::max(maximum_[b], hi[b]);
  }
}

Moments ExactSums::moments() const {
  Moments result(bands_);
  if (count_ == 0) return result;
  result.count = count_;
  const auto pixels = static_cast<double>(count_);
  std::vector<double> deviationSum(bands_);
  for (int b = 0; b < bands_; ++b) {
    deviationSum[b] = static_cast<double>(products_[at(b, bands_)]);
    result.mean[b] = static_cast<double>(shift_[b]) + deviationSum[b] / pixels;
  }
  for (int j = 0; j < bands_; ++j)
    for (int i = 0; i <= j; ++i) {
      const double value =
          static_cast<double>(products_[at(i, j)]) - deviationSum[i] * deviationSum[j] / pixels;
      result.comoment[static_cast<size_t>(i) * bands_ + j] = value;
      result.comoment[static_cast<size_t>(j) * bands_ + i] = value;
    }
  result.minimum = minimum_;
  result.maximum = maximum_;
  return result;
}

bool IntegerMoments::supported() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vnni");
}

void IntegerMoments::listValid(const unsigned char* valid, int64_t count) {
  validPixels_.clear();
  for (int64_t p = 0; p < count; ++p)
    if (valid[p]) validPixels_.push_back(p);
}

template <class T>
std::vector<int64_t> IntegerMoments::shiftFor(const T* data, SampleLayout layout,
                                              const unsigned char* valid, int64_t count,
                                              int bands) {
  listValid(valid, count);
  if (validPixels_.empty()) return {};
  return sampleShift(data, layout, bands);
}

template <class T>
bool IntegerMoments::add(const T* data, SampleLayout layout, const unsigned char* valid,
                         int64_t count, int bands, ExactSums& sums) {
  listValid(valid, count);
  return validPixels_.empty() || multiply(data, layout, count, bands, sums);
}

template <class T>
bool IntegerMoments::compute(const T* data, SampleLayout layout, const unsigned char* valid,
                             int64_t count, int bands, Moments& result) {
  listValid(valid, count);
  if (validPixels_.empty()) {
    result = Moments(bands);
    return true;
  }
  ExactSums own(bands, sampleShift(data, layout, bands));
  if (!multiply(data, layout, count, bands, own)) return false;
  result = own.moments();
  return true;
}

// The products of the valid pixels' deviations from sums.shift(), added to `sums`.
template <class T>
bool IntegerMoments::multiply(const T* data, SampleLayout layout, int64_t count, int bands,
                              ExactSums& sums) {
  static_assert(std::is_integral_v<T> && sizeof(T) <= 4, "integer samples of at most 32 bits");
  shift_ = sums.shift();
  std::vector<T> lo(bands, std::numeric_limits<T>::max());
  std::vector<T> hi(bands, std::numeric_limits<T>::lowest());
  const bool byBand = !layout.isPixelInterleaved();
  const int64_t steps = byBand ? packBandRows(data, layout, count, bands, lo.data(), hi.data())
                               : packPairs(data, bands, lo.data(), hi.data());
  return addPacked(steps, byBand, static_cast<int64_t>(validPixels_.size()), lo, hi, sums);
}

// The products of the packed rows added to `sums`, when the values' range [lo, hi] (per band)
// lets the kernel take them exactly.
template <class R>
bool IntegerMoments::addPacked(int64_t steps, bool byBand, int64_t count, const std::vector<R>& lo,
                               const std::vector<R>& hi, ExactSums& sums) {
  const auto bands = static_cast<int>(lo.size());
  int64_t spread = 1;
  for (int b = 0; b < bands; ++b)
    spread = std::max(
        {spread, static_cast<int64_t>(hi[b]) - shift_[b], shift_[b] - static_cast<int64_t>(lo[b])});
  if (!productsFromPacked(steps, bands, spread, byBand)) return false;
  lo_.assign(lo.begin(), lo.end());
  hi_.assign(hi.begin(), hi.end());
  sums.addProducts(total_.data(), roundUp(bands + 1, kRowBlock), count, lo_.data(), hi_.data());
  return true;
}

// The sums of products of the packed rows into total_. Deviations must fit 16 bits (else the
// packing wrapped), and 2·flushSteps·spread² 31 bits.
bool IntegerMoments::productsFromPacked(int64_t steps, int bands, int64_t spread, bool byBand) {
  if (spread > std::numeric_limits<int16_t>::max()) return false;
  const int64_t flushSteps =
      static_cast<int64_t>(std::numeric_limits<int32_t>::max()) / (2 * spread * spread);
  if (flushSteps < kMinFlushSteps) return false;
  const int paddedRows = roundUp(bands + 1, kRowBlock);
  total_.resize(static_cast<size_t>(bands + 1 + kColumnBlock) * paddedRows);
  if (byBand)
    bandProducts(bandRows_.data(), bandRowStride(steps), bandRowStride(steps) / kPairsPerVector,
                 bands + 1, paddedRows, flushSteps, total_.data());
  else
    pairProducts(packed_.data(), steps, packedStride(bands), bands + 1, paddedRows, flushSteps,
                 total_.data());
  return true;
}

// pairsInRow_ for the rows, and the pairs in all.
template <class T>
int64_t IntegerMoments::countPairs(const DifferenceRow<T>* rows, int64_t rowCount, int64_t pairs) {
  pairsInRow_.resize(rowCount);
  int64_t n = 0;
  for (int64_t r = 0; r < rowCount; ++r) {
    int64_t count = 0;
    for (int64_t c = 0; c < pairs; ++c) count += rows[r].paired[c];
    pairsInRow_[r] = count;
    n += count;
  }
  return n;
}

template <class T>
std::vector<int64_t> IntegerMoments::differenceShiftFor(const DifferenceRow<T>* rows,
                                                        int64_t rowCount, int64_t pairs,
                                                        int bands) {
  const int64_t n = countPairs(rows, rowCount, pairs);
  if (n == 0) return {};
  return sampleDifferenceShift(rows, pairs, n, bands);
}

template <class T>
bool IntegerMoments::addDifferences(const DifferenceRow<T>* rows, int64_t rowCount, int64_t pairs,
                                    int bands, ExactSums& sums) {
  const int64_t n = countPairs(rows, rowCount, pairs);
  return n == 0 || multiplyDifferences(rows, rowCount, pairs, n, bands, sums);
}

template <class T>
bool IntegerMoments::computeDifferences(const DifferenceRow<T>* rows, int64_t rowCount,
                                        int64_t pairs, int bands, Moments& result) {
  const int64_t n = countPairs(rows, rowCount, pairs);
  if (n == 0) {
    result = Moments(bands);
    return true;
  }
  ExactSums own(bands, sampleDifferenceShift(rows, pairs, n, bands));
  if (!multiplyDifferences(rows, rowCount, pairs, n, bands, own)) return false;
  result = own.moments();
  return true;
}

template <class T>
bool IntegerMoments::multiplyDifferences(const DifferenceRow<T>* rows, int64_t rowCount,
                                         int64_t pairs, int64_t n, int bands, ExactSums& sums) {
  static_assert(std::is_integral_v<T> && sizeof(T) <= 2, "integer samples of at most 16 bits");
  shift_ = sums.shift();
  std::vector<int32_t> lo(bands, std::numeric_limits<int32_t>::max());
  std::vector<int32_t> hi(bands, std::numeric_limits<int32_t>::lowest());
  const bool byBand = !rows[0].pixelLayout.isPixelInterleaved();
  if (byBand)
    packDifferenceRows(rows, rowCount, pairs, n, bands, lo.data(), hi.data());
  else
    packDifferencePairs(rows, rowCount, pairs, n, bands, lo.data(), hi.data());
  return addPacked((n + 1) / 2, byBand, n, lo, hi, sums);
}

// The shift for the differences: the rounded mean of the same sample of valid pairs (the k-th
// of n in row order) that sampleShift takes of their Int32 samples.
template <class T>
std::vector<int64_t> IntegerMoments::sampleDifferenceShift(const DifferenceRow<T>* rows,
                                                           int64_t pairs, int64_t n,
                                                           int bands) const {
  const int64_t sample = std::min(n, kShiftSample);
  std::vector<int64_t> shift(bands, 0);
  int64_t row = 0, before = 0;  // pairs in the rows before `row`
  for (int64_t k = 0; k < sample; ++k) {
    const int64_t wanted = k * n / sample;  // increasing in k
    while (before + pairsInRow_[row] <= wanted) before += pairsInRow_[row++];
    const DifferenceRow<T>& r = rows[row];
    int64_t c = wanted - before;  // in a row with every pair valid
    if (pairsInRow_[row] != pairs) {
      c = -1;
      for (int64_t seen = before - 1; seen < wanted;) seen += r.paired[++c];
    }
    for (int b = 0; b < bands; ++b)
      shift[b] +=
          static_cast<int64_t>(
              r.partner[c * r.partnerLayout.pixelStep + b * r.partnerLayout.bandStep]) -
          static_cast<int64_t>(r.pixel[c * r.pixelLayout.pixelStep + b * r.pixelLayout.bandStep]);
  }
  for (int64_t& s : shift) s = (2 * s + (s < 0 ? -sample : sample)) / (2 * sample);
  return shift;
}

// Band-major rows' pairs: each band's differences, a row at a time (all of them, or the valid
// ones listed), as band rows of deviations from shift_ (as packBandRows packs samples).
template <class T>
void IntegerMoments::packDifferenceRows(const DifferenceRow<T>* rows, int64_t rowCount,
                                        int64_t pairs, int64_t n, int bands, int32_t* lo,
                                        int32_t* hi) {
  const int64_t steps = (n + 1) / 2;
  const int64_t stride = 2 * bandRowStride(steps);  // halves
  const int rowsPacked = bands + 1 + kTileColumns;
  bandRows_.resize(static_cast<size_t>(rowsPacked) * stride);
  listed_.resize(pairs);
  int64_t at = 0;  // pairs packed so far
  for (int64_t r = 0; r < rowCount; ++r) {
    const DifferenceRow<T>& row = rows[r];
    int64_t count = pairs;
    const bool dense = pairsInRow_[r] == pairs;
    if (!dense) {
      count = 0;
      for (int64_t c = 0; c < pairs; ++c)
        if (row.paired[c]) listed_[count++] = c;
    }
    packBandRow(row, dense ? nullptr : listed_.data(), count, bands, stride, at, lo, hi);
    at += count;
  }
  for (int b = 0; b < bands; ++b) {
    uint16_t* row = bandRows_.data() + b * stride;
    std::fill(row + n, row + stride, 0);
  }
  uint16_t* ones = bandRows_.data() + bands * stride;
  std::fill(ones, ones + n, 1);
  std::fill(ones + n, bandRows_.data() + rowsPacked * stride, 0);
}

// Pixel-interleaved rows' valid pairs, two to a packed row as packPairs packs pixels.
template <class T>
void IntegerMoments::packDifferencePairs(const DifferenceRow<T>* rows, int64_t rowCount,
                                         int64_t pairs, int64_t n, int bands, int32_t* lo,
                                         int32_t* hi) {
  const std::vector<int32_t> shiftBits(shift_.begin(), shift_.end());  // modulo 2^32
  const int stride = packedStride(bands);
  packed_.resize(static_cast<size_t>((n + 1) / 2) * stride);
  int32_t* packed = packed_.data();
  const T* waiting[2] = {nullptr, nullptr};  // a pair's partner and pixel, until the next one
  auto pack = [&](const T* partner, const T* pixel) {
    const bool second = partner != nullptr;
    packDifferencePair(waiting[0], waiting[1], second ? partner : waiting[0],
                       second ? pixel : waiting[1], second, shiftBits.data(), packed, lo, hi,
                       bands);
    packed[bands] = second ? 0x00010001 : 1;
    std::fill(packed + bands + 1, packed + stride, 0);
    packed += stride;
    waiting[0] = nullptr;
  };
  for (int64_t r = 0; r < rowCount; ++r) {
    const DifferenceRow<T>& row = rows[r];
    for (int64_t c = 0; c < pairs; ++c) {
      if (!row.paired[c]) continue;
      const T* partner = row.partner + c * row.partnerLayout.pixelStep;
      const T* pixel = row.pixel + c * row.pixelLayout.pixelStep;
      if (waiting[0]) {
        pack(partner, pixel);
      } else {
        waiting[0] = partner;
        waiting[1] = pixel;
      }
    }
  }
  if (waiting[0]) pack(nullptr, nullptr);
}

// One band-major row's pairs (those `listed`, or all): each band's run of differences straight
// into its band row from `at`.
template <class T>
void IntegerMoments::packBandRow(const DifferenceRow<T>& row, const int64_t* listed, int64_t count,
                                 int bands, int64_t stride, int64_t at, int32_t* lo, int32_t* hi) {
  for (int b = 0; b < bands; ++b) {
    const T* pixel = row.pixel + b * row.pixelLayout.bandStep;
    const T* partner = row.partner + b * row.partnerLayout.bandStep;
    uint16_t* out = bandRows_.data() + b * stride + at;
    const auto shift = static_cast<int32_t>(shift_[b]);
    if (listed)
      packListedDifferences(partner, pixel, listed, count, shift, lo + b, hi + b, out);
    else
      packBandDifferences(partner, pixel, count, shift, lo + b, hi + b, out);
  }
}

// Each band's rounded mean over a sample of validPixels_, so that the deviations are small.
template <class T>
std::vector<int64_t> IntegerMoments::sampleShift(const T* data, SampleLayout layout,
                                                 int bands) const {
  const auto n = static_cast<int64_t>(validPixels_.size());
  const int64_t sample = std::min(n, kShiftSample);
  std::vector<int64_t> shift(bands, 0);
  for (int64_t k = 0; k < sample; ++k) {
    const T* pixel = data + validPixels_[k * n / sample] * layout.pixelStep;
    for (int b = 0; b < bands; ++b) shift[b] += static_cast<int64_t>(pixel[b * layout.bandStep]);
  }
  for (int64_t& s : shift) s = (2 * s + (s < 0 ? -sample : sample)) / (2 * sample);
  return shift;
}

// Packs the valid pixels in pairs, with a last band of ones: its products with the other bands
// are the deviations' sums, and with itself the count. Rows are padded with zeros for the
// kernel's whole blocks. Returns the number of pairs; `lo` and `hi` get each band's range.
template <class T>
int64_t IntegerMoments::packPairs(const T* data, int bands, T* lo, T* hi) {
  const std::vector<int32_t> shiftBits(shift_.begin(), shift_.end());  // modulo 2^32
  const auto n = static_cast<int64_t>(validPixels_.size());
  const int columns = bands + 1;
  const int stride = packedStride(bands);
  const int64_t steps = (n + 1) / 2;
  packed_.resize(static_cast<size_t>(steps) * stride);
  for (int64_t t = 0; t < steps; ++t) {
    const bool pair = 2 * t + 1 < n;
    int32_t* row = packed_.data() + t * stride;
    packPair(data + validPixels_[2 * t] * bands,
             pair ? data + validPixels_[2 * t + 1] * bands : nullptr, shiftBits.data(), row, lo, hi,
             bands);
    row[bands] = pair ? 0x00010001 : 1;
    std::fill(row + columns, row + stride, 0);
  }
  return steps;
}

// Words per band row of band-major packing: the pairs, padded to whole vectors.
int64_t IntegerMoments::bandRowStride(int64_t pairs) {
  return (pairs + kPairsPerVector - 1) / kPairsPerVector * kPairsPerVector;
}

// packPairs for band-major samples: one row per band (each band's samples together, as they
// lie), the row of ones, and zero rows for the last tiles; rows padded with zeros to whole vectors.
template <class T>
int64_t IntegerMoments::packBandRows(const T* data, SampleLayout layout, int64_t count, int bands,
                                     T* lo, T* hi) {
  const auto n = static_cast<int64_t>(validPixels_.size());
  const int64_t steps = (n + 1) / 2;
  const int64_t stride = 2 * bandRowStride(steps);  // halves
  const int rows = bands + 1 + kTileColumns;        // the last tiles read zero rows past the ones
  bandRows_.resize(static_cast<size_t>(rows) * stride);
  const bool dense = n == count;  // every pixel valid
  // With gaps (a fill border, dead rows) the valid pixels mostly come in runs, each packed as a
  // band of its own; scattered ones one at a time.
  validRuns_.clear();
  if (!dense)
    for (int64_t i = 0, j = 0; i < n; i = j) {
      for (j = i + 1; j < n && validPixels_[j] == validPixels_[j - 1] + 1;) ++j;
      validRuns_.push_back({validPixels_[i], j - i});
    }
  const bool byRuns = static_cast<int64_t>(validRuns_.size()) * kShortestMeanRun <= n;
  for (int b = 0; b < bands; ++b) {
    const T* band = data + b * layout.bandStep;
    uint16_t* row = bandRows_.data() + b * stride;
    const auto shift = static_cast<uint32_t>(shift_[b]);
    if (dense) {
      packBand(band, n, shift, lo + b, hi + b, row);
    } else if (byRuns) {
      int64_t at = 0;
      for (const auto& [first, length] : validRuns_) {
        packBand(band + first, length, shift, lo + b, hi + b, row + at);
        at += length;
      }
    } else {
      packBandAt(band, validPixels_.data(), n, shift, lo + b, hi + b, row);
    }
    std::fill(row + n, row + stride, 0);
  }
  uint16_t* ones = bandRows_.data() + bands * stride;
  std::fill(ones, ones + n, 1);
  std::fill(ones + n, bandRows_.data() + rows * stride, 0);
  return steps;
}

#define HYPERSTREAM_INTEGER_MOMENTS(T)                                                          \
  template std::vector<int64_t> IntegerMoments::shiftFor(const T*, SampleLayout,                \
                                                         const unsigned char*, int64_t, int);   \
  template bool IntegerMoments::add(const T*, SampleLayout, const unsigned char*, int64_t, int, \
                                    ExactSums&);                                                \
  template bool IntegerMoments::compute(const T*, SampleLayout, const unsigned char*, int64_t,  \
                                        int, Moments&);
#define HYPERSTREAM_DIFFERENCE_MOMENTS(T)                                                          \
  template std::vector<int64_t> IntegerMoments::differenceShiftFor(const DifferenceRow<T>*,        \
                                                                   int64_t, int64_t, int);         \
  template bool IntegerMoments::addDifferences(const DifferenceRow<T>*, int64_t, int64_t, int,     \
                                               ExactSums&);                                        \
  template bool IntegerMoments::computeDifferences(const DifferenceRow<T>*, int64_t, int64_t, int, \
                                                   Moments&);
HYPERSTREAM_INTEGER_MOMENTS(uint8_t)
HYPERSTREAM_INTEGER_MOMENTS(int16_t)
HYPERSTREAM_INTEGER_MOMENTS(uint16_t)
HYPERSTREAM_INTEGER_MOMENTS(int32_t)
HYPERSTREAM_INTEGER_MOMENTS(uint32_t)
HYPERSTREAM_DIFFERENCE_MOMENTS(uint8_t)
HYPERSTREAM_DIFFERENCE_MOMENTS(int16_t)
HYPERSTREAM_DIFFERENCE_MOMENTS(uint16_t)

}  // namespace hyperstream
