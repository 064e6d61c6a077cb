#pragma once
// PCA's device kernels: valid-pixel mask, centring/conversion with band statistics, ranges
// and output encoding. Matrices are pixel-interleaved (pixel p, row r at p*rows + r), which is
// cuBLAS's column-major rows x pixels.

#include <cuda_runtime.h>

#include <cstdint>

namespace hyperstream::cuda {

// Blocks of the partial reductions (each writes one partial per row).
int reductionBlocks(int64_t pixels);

// valid[p] = every band finite and not its nodata value (hasNodata[b], nodataValue[b] in the
// sample type T); *count += the number of valid pixels.
template <class T>
void markValid(const T* raw, int64_t pixels, int bands, const T* nodataValue,
               const unsigned char* hasNodata, unsigned char* valid, unsigned long long* count,
               cudaStream_t stream);

// out[p,b] = valid[p] ? double(raw[p,b]) - center[b] : 0, and each block's per band sum of out and
// range of raw over valid pixels: partials[3][blocks][bands] (sum, min, max), blocks =
// reductionBlocks(pixels).
template <class T>
void centre(const T* raw, int64_t pixels, int bands, const unsigned char* valid,
            const double* center, double* out, double* partials, cudaStream_t stream);

// The projection: out[p,k] = Σ_b C(double(raw[p,b]) - center[b]) · weights[b,k] for valid
// pixels, `invalid` for the others, weights row-major bands x components, the bands summed in
// order. It also writes valid[p], by markValid's rule; a null nodataValue: every pixel is valid.
template <class T, class C>
void project(const T* raw, int64_t pixels, int bands, const T* nodataValue,
             const unsigned char* hasNodata, unsigned char* valid, const double* center,
             const C* weights, int components, double invalid, C* out, cudaStream_t stream);

// As centre() with partials, writing no centred values: the band statistics alone.
template <class T>
void bandStatistics(const T* raw, int64_t pixels, int bands, const unsigned char* valid,
                    const double* center, double* partials, cudaStream_t stream);

// Exact moments of 8/16-bit integer pixels on int8 tensor cores. splitDigits writes the deviations
// d = valid ? raw - shift : 0 as three int8 digit planes (d = 2^14 a + 2^7 b + c), each band-major
// (band b, pixel p at b * ld + p), the layout of a "TN" int8 GEMM: `depth` digits per band (pixels
// <= depth <= ld, the GEMMs' inner length) and paddedBands >= bands rows, the padding zero.
// The planes follow each other, so they form one (3 paddedBands) x depth int8 matrix S;
// combineDigits adds Σ d_i d_j to gram (bands x bands) from the int32 product S S^T (3 paddedBands
// square, column-major).
template <class T>
void splitDigits(const T* raw, int64_t pixels, int bands, const unsigned char* valid,
                 const double* shift, int64_t ld, int64_t depth, int paddedBands, int8_t* planes,
                 cudaStream_t stream);
void combineDigits(const int32_t* products, int bands, int paddedBands, double* gram,
                   cudaStream_t stream);

// MNF's noise: for pixels [first, first + pixels) of a segment of whole rows (`width` pixels
// each), out[p - first, b] = x(partner) - x(pixel) in float64 with the partner rowStep rows up and
// columnStep columns left, or 0 where the pair is not valid: either pixel invalid by markValid's
// rule (a null nodataValue: no nodata), the partner outside the image's columns, or above the
// segment without `above` (the segment's row above, one row long). *count += the valid pairs.
template <class T>
void noiseDifferences(const T* segment, const T* above, int64_t first, int64_t pixels,
                      int64_t width, int bands, int rowStep, int columnStep, const T* nodataValue,
                      const unsigned char* hasNodata, double* out, unsigned long long* count,
                      cudaStream_t stream);

// Per block range of m's rows over valid pixels: partials[3][blocks][rows] (sum left 0).
template <class C>
void rangePartials(const C* m, int64_t pixels, int rows, const unsigned char* valid,
                   double* partials, cudaStream_t stream);

// Merges the partials of `blocks` blocks into running sum/min/max per row (sum may be null).
void mergePartials(const double* partials, int blocks, int rows, double* sum, double* minimum,
                   double* maximum, cudaStream_t stream);

// Byte output: round(low + (v - minimum[k]) * scale[k]) clamped to 0..255, half away from zero;
// invalid pixels get `nodata`.
void encodeByte(const float* values, int64_t pixels, int components, const unsigned char* valid,
                const double* minimum, const double* scale, double low, unsigned char nodata,
                unsigned char* out, cudaStream_t stream);

// Rebuilding: out[p, j] = toSample<Out>(offset[j] + Σ_k values[p, k] · restore[k, j]) in float64
// (the components in order; restore row-major components x outputs) for valid pixels, `nodata`
// for the others (core/Rounding.h's rule, as the CPU kernels).
template <class C, class Out>
void rebuild(const C* values, int64_t pixels, int components, const unsigned char* valid,
             const double* restore, const double* offset, int outputs, double nodata,
             bool avoidNodata, Out* out, cudaStream_t stream);

// Detection scores (projection/PcaKernels.h's DetectionScores) from float64 projected values
// (components per pixel): out[p] = Σ_{k < whitened} values[p, k]² (targets = 0: RX), or per target
// t out[p, t] = z² · targetPower[t] / that sum with z = values[p, whitened + t] (ACE; 0 where the
// sum is 0); invalid pixels get `nodata`.
template <class Out>
void scores(const double* values, int64_t pixels, int components, int whitened,
            const double* targetPower, int targets, const unsigned char* valid, double nodata,
            Out* out, cudaStream_t stream);

}  // namespace hyperstream::cuda
