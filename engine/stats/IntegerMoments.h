#pragma once
// Exact moments of integer pixels (Byte, Int16, UInt16, Int32, UInt32) with AVX-512 VNNI.
//
// Each band is shifted by the rounded mean of a sample of pixels, so the deviations fit 16 bits for
// any real sensor's DN; VPDPWSSD then multiplies pairs of pixels in 16-bit integers and adds them
// into 32-bit sums, 32 multiply-adds per instruction, which are moved into 64-bit sums before they
// can overflow, and each group's into 128-bit ones (ExactSums). With one shift for every group of
// a pass, the sums of the whole image are exact whatever the threads and strips, and only the
// final Σ(x-s)(x-s)^T - S S^T / n is rounded, once, in float64. OpenBLAS has no integer GEMM and
// its DSYRK reaches about a third of these cores' float64 peak, so this runs several times faster
// than converting to float64 for DSYRK, and is more accurate.

#include "core/Samples.h"
#include "stats/Moments.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace hyperstream {

// One image row's pixel pairs for IntegerMoments::computeDifferences: pair c is the pixel at
// pixel + c * pixelLayout.pixelStep and its partner at partner + c * partnerLayout.pixelStep (band
// b a bandStep further), taken when paired[c] is set.
template <class T>
struct DifferenceRow {
  const T* pixel = nullptr;
  SampleLayout pixelLayout;
  const T* partner = nullptr;
  SampleLayout partnerLayout;
  const unsigned char* paired = nullptr;
};

// Sums of products of pixels' deviations from one shift per band, held exactly (128-bit integers),
// so that groups added on any thread, in any order, give the same bits; rounded once, by moments().
class ExactSums {
 public:
  ExactSums() = default;
  ExactSums(int bands, std::vector<int64_t> shift);

  bool started() const { return bands_ > 0; }
  const std::vector<int64_t>& shift() const { return shift_; }
  // Adds sums about the same shift.
  void add(const ExactSums& other);
  // Count, mean, co-moment (Σ(x-s)(x-s)^T - S S^T / n, S = Σ(x-s)) and range.
  Moments moments() const;

 private:
  friend class IntegerMoments;
  // Adds one group's products: total[j * paddedRows + i] for i <= j <= bands, column `bands` (the
  // row of ones) holding the deviation sums.
  void addProducts(const int64_t* total, int paddedRows, int64_t count, const double* lo,
                   const double* hi);
  // The upper triangle, column by column: column j holds rows 0..j.
  static size_t at(int i, int j) { return static_cast<size_t>(j) * (j + 1) / 2 + i; }

  int bands_ = 0;
  std::vector<int64_t> shift_;
  std::vector<__int128> products_;  // at(i, j), i <= j <= bands
  int64_t count_ = 0;
  std::vector<double> minimum_, maximum_;
};

class IntegerMoments {
 public:
  // True when this CPU runs AVX-512 VNNI.
  static bool supported();

  // The shift for a run of groups: each band's rounded mean over a sample of the valid pixels p <
  // count (valid[p] != 0; pixel p's band b where `layout` says); empty when none is valid.
  template <class T>
  std::vector<int64_t> shiftFor(const T* data, SampleLayout layout, const unsigned char* valid,
                                int64_t count, int bands);
  // Adds the valid pixels' products about sums.shift() to `sums`. Returns false, leaving `sums`
  // untouched, when some band's values lie so far from the shift that 16-bit deviations or 32-bit
  // partial sums cannot hold them: the caller then takes another path. T is uint8_t, int16_t,
  // uint16_t, int32_t or uint32_t.
  template <class T>
  bool add(const T* data, SampleLayout layout, const unsigned char* valid, int64_t count, int bands,
           ExactSums& sums);
  // The moments of one group about a shift of its own (see add for when it returns false).
  template <class T>
  bool compute(const T* data, SampleLayout layout, const unsigned char* valid, int64_t count,
               int bands, Moments& result);

  // The same for the differences partner - pixel over the pairs of `rows` rows of `pairs` pairs
  // each, packed as they are made (MNF's noise): the sums compute() and add() make of the
  // differences' Int32 samples. T holds at most 16 bits.
  template <class T>
  std::vector<int64_t> differenceShiftFor(const DifferenceRow<T>* rows, int64_t rowCount,
                                          int64_t pairs, int bands);
  template <class T>
  bool addDifferences(const DifferenceRow<T>* rows, int64_t rowCount, int64_t pairs, int bands,
                      ExactSums& sums);
  template <class T>
  bool computeDifferences(const DifferenceRow<T>* rows, int64_t rowCount, int64_t pairs, int bands,
                          Moments& result);

 private:
  void listValid(const unsigned char* valid, int64_t count);
  template <class T>
  std::vector<int64_t> sampleShift(const T* data, SampleLayout layout, int bands) const;
  template <class T>
  bool multiply(const T* data, SampleLayout layout, int64_t count, int bands, ExactSums& sums);
  template <class T>
  int64_t packPairs(const T* data, int bands, T* lo, T* hi);
  template <class T>
  int64_t packBandRows(const T* data, SampleLayout layout, int64_t count, int bands, T* lo, T* hi);
  static int64_t bandRowStride(int64_t pairs);
  template <class T>
  int64_t countPairs(const DifferenceRow<T>* rows, int64_t rowCount, int64_t pairs);
  template <class T>
  std::vector<int64_t> sampleDifferenceShift(const DifferenceRow<T>* rows, int64_t pairs, int64_t n,
                                             int bands) const;
  template <class T>
  bool multiplyDifferences(const DifferenceRow<T>* rows, int64_t rowCount, int64_t pairs, int64_t n,
                           int bands, ExactSums& sums);
  // The pairs' deviations from shift_ as band rows (and the row of ones) or, pixel-interleaved,
  // as packed pairs; `lo` and `hi` get each band's range of differences.
  template <class T>
  void packDifferenceRows(const DifferenceRow<T>* rows, int64_t rowCount, int64_t pairs, int64_t n,
                          int bands, int32_t* lo, int32_t* hi);
  template <class T>
  void packBandRow(const DifferenceRow<T>& row, const int64_t* listed, int64_t count, int bands,
                   int64_t stride, int64_t at, int32_t* lo, int32_t* hi);
  template <class T>
  void packDifferencePairs(const DifferenceRow<T>* rows, int64_t rowCount, int64_t pairs, int64_t n,
                           int bands, int32_t* lo, int32_t* hi);
  bool productsFromPacked(int64_t steps, int bands, int64_t spread, bool byBand);
  template <class R>
  bool addPacked(int64_t steps, bool byBand, int64_t count, const std::vector<R>& lo,
                 const std::vector<R>& hi, ExactSums& sums);

  std::vector<int64_t> validPixels_;
  std::vector<std::pair<int64_t, int64_t>> validRuns_;  // consecutive valid pixels: first, count
  std::vector<int64_t> shift_;                          // of the sums being added to
  std::vector<int32_t> packed_;      // pairs of pixels, one 32-bit word (two deviations) per band
  std::vector<uint16_t> bandRows_;   // band-major: each band's deviations in a row, pairs in words
  std::vector<int64_t> total_;       // one group's sums of products, [column][row]
  std::vector<double> lo_, hi_;      // one group's range
  std::vector<int64_t> pairsInRow_;  // differences: valid pairs per row
  std::vector<int64_t> listed_;      // ... and the valid pairs of a band-major row
};

}  // namespace hyperstream
