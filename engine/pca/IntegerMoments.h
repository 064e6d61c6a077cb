#pragma once
// Exact moments of integer pixels (Byte, Int16, UInt16, Int32, UInt32) with AVX-512 VNNI.
//
// Each band is shifted by the rounded mean of a sample of pixels, so the deviations fit 16 bits for
// any real sensor's DN; VPDPWSSD then multiplies pairs of pixels in 16-bit integers and adds them
// into 32-bit sums, 32 multiply-adds per instruction, which are moved into 64-bit sums before they
// can overflow. The co-moment sums are therefore exact, and only the final Σ(x-s)(x-s)^T - S S^T /
// n is rounded, once, in float64. OpenBLAS has no integer GEMM and its DSYRK reaches about a third
// of these cores' float64 peak, so this runs several times faster than converting to float64 for
// DSYRK, and is more accurate.

#include "core/Samples.h"
#include "pca/Moments.h"

#include <cstdint>
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

class IntegerMoments {
 public:
  // True when this CPU runs AVX-512 VNNI.
  static bool supported();

  // The moments of the pixels p < count with valid[p] != 0 (pixel p's band b where `layout`
  // says), written into `result` (whose arrays are reused). Returns false,
  // leaving `result` untouched, when some band's values lie
  // so far from its mean that 16-bit deviations or 32-bit partial sums cannot hold them: the
  // caller then takes the float64 path. T is uint8_t, int16_t, uint16_t, int32_t or uint32_t.
  template <class T>
  bool compute(const T* data, SampleLayout layout, const unsigned char* valid, int64_t count,
               int bands, Moments& result);
  // The moments (count, mean, co-moment) of the differences partner - pixel over the pairs of
  // `rows` rows of `pairs` pairs each, packed as they are made (MNF's noise): the same sums, in
  // the same order, as compute() of the differences' Int32 samples. T holds at most 16 bits.
  // Returns false, leaving `result` untouched, where compute() would.
  template <class T>
  bool computeDifferences(const DifferenceRow<T>* rows, int64_t rowCount, int64_t pairs, int bands,
                          Moments& result);

 private:
  template <class T>
  void chooseShift(const T* data, SampleLayout layout, int bands);
  template <class T>
  int64_t packPairs(const T* data, int bands, T* lo, T* hi);
  template <class T>
  int64_t packBandRows(const T* data, SampleLayout layout, int64_t count, int bands, T* lo, T* hi);
  static int64_t bandRowStride(int64_t pairs);
  // The pairs' deviations from shift_ as band rows (and the row of ones); `lo` and `hi` get each
  // band's range of differences.
  template <class T>
  void chooseDifferenceShift(const DifferenceRow<T>* rows, int64_t n, int bands);
  template <class T>
  void packDifferenceRows(const DifferenceRow<T>* rows, int64_t rowCount, int64_t pairs, int64_t n,
                          int bands, int32_t* lo, int32_t* hi);
  template <class T>
  void packPixelBlock(const DifferenceRow<T>& row, int64_t c0, const int64_t* listed, int64_t count,
                      int bands, int64_t stride, int64_t at, int32_t* lo, int32_t* hi);
  template <class T>
  void packBandBlock(const DifferenceRow<T>& row, int64_t c0, const int64_t* listed, int64_t count,
                     int bands, int64_t stride, int64_t at, int32_t* lo, int32_t* hi);
  bool productsFromPacked(int64_t steps, int bands, int64_t spread, bool byBand);
  void momentsFromSums(int bands, int64_t count, int paddedRows, Moments& result);

  std::vector<int64_t> validPixels_;
  std::vector<int64_t> shift_;
  std::vector<int32_t> packed_;     // pairs of pixels, one 32-bit word (two deviations) per band
  std::vector<uint16_t> bandRows_;  // band-major: each band's deviations in a row, pairs in words
  std::vector<int64_t> total_;      // sums of products, [column][row]
  std::vector<double> deviationSum_;
  std::vector<int64_t> pairsInRow_;  // computeDifferences: valid pairs per row
  std::vector<int32_t> tile_;        // ... and pixel-interleaved pairs' differences, 64 at a time
};

}  // namespace hyperstream
