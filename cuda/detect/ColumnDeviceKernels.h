#pragma once
// The per-column detectors' device kernels (see engine/detect/ColumnDetectKernels.h): a chunk of
// `rows` image rows of `width` columns and `bands` bands, pixel-interleaved; each column's sums
// and its pixels' products with its factor and filters are cuBLAS batched calls between them.

#include "core/JobOptions.h"
#include "detect/Detector.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace hyperstream::cuda {

// The columns' state of pass 1, width x bands values each (column-major: column c's band b at
// c * bands + b), and per column its valid pixels, its vertically adjacent pairs and the row of
// its last valid pixel.
struct ColumnState {
  double *shift, *s1, *low, *high, *noise, *above;
  long long *count, *pairs, *aboveRow;
};

// valid[p]: every band of pixel p finite and not its band's nodata.
template <class T>
void pixelValidity(const T* raw, int64_t pixels, int bands, const T* nodataValue,
                   const unsigned char* hasNodata, unsigned char* valid, cudaStream_t stream);

// Each column with no valid pixel yet takes its first valid pixel of the chunk as its shift (and
// its first low, high and pixel above).
template <class T>
void startColumns(const T* raw, const unsigned char* valid, int64_t rows, int64_t width, int bands,
                  ColumnState state, cudaStream_t stream);

// deviations = x − shift (0 for invalid pixels), and the chunk's valid pixels into s1, low, high,
// the noise and the pixel above; the chunk's first row is image row row0.
template <class T>
void addDeviations(const T* raw, const unsigned char* valid, int64_t rows, int64_t width, int bands,
                   int64_t row0, ColumnState state, double* deviations, cudaStream_t stream);

// The chunk's valid pixels into count, pairs and aboveRow (after addDeviations).
void countColumns(const unsigned char* valid, int64_t rows, int64_t width, int64_t row0,
                  ColumnState state, cudaStream_t stream);

// Each of `columns` symmetric bands x bands matrices' upper triangle, packed by rows.
void packUpper(const double* squares, int64_t columns, int bands, double* packed,
               cudaStream_t stream);

// Each of `columns` packed lower factors (rows i: j ≤ i) as a full bands x bands matrix, row-major,
// zero above the diagonal.
void unpackFactors(const double* packed, int64_t columns, int bands, double* full,
                   cudaStream_t stream);

// deviations = x − the column's mean, 0 for invalid pixels and unscored columns.
template <class T>
void centre(const T* raw, const unsigned char* valid, const unsigned char* scored,
            const double* mean, int64_t rows, int64_t width, int bands, double* deviations,
            cudaStream_t stream);

// lengths[p] = |whitened pixel p|² (pixels x bands, pixel-interleaved).
void squaredLengths(const double* whitened, int64_t pixels, int bands, double* lengths,
                    cudaStream_t stream);

// Each pixel's `outputs` scores from the filters' products (pixels x outputs) and the whitened
// lengths: RX the length, MF the product, ACE product² / length; NaN for invalid pixels and
// unscored columns.
template <class Out>
void finishScores(DetectMethod method, const double* products, const double* lengths,
                  const unsigned char* valid, const unsigned char* scored, int64_t pixels,
                  int64_t width, int outputs, Out* scores, cudaStream_t stream);

}  // namespace hyperstream::cuda
