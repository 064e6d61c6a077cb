#pragma once
// The unmixing chain's device kernels (see engine/pixels/PixelKernels.h); the products of
// pixels with weights or endmembers are cuBLAS calls between them.

#include "pixels/AbundanceSolver.h"
#include "pixels/PixelKernels.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace hyperstream::cuda {

// Pixel p of `pixels` pixel-interleaved spectra as a float64 row minus `center` (null: none),
// zero for invalid pixels; valid[p], weight[p] (1 or 0) and energy[p] = |row|².
template <class T>
void unmixingRows(const T* raw, int64_t pixels, int bands, const T* nodataValue,
                  const unsigned char* hasNodata, const double* center, double* rows,
                  unsigned char* valid, double* weight, double* energy, cudaStream_t stream);

// low[b] and high[b]: the least and largest of band b over the valid pixels of `rows` (pixels x
// bands, pixel-interleaved).
void bandRanges(const double* rows, const unsigned char* valid, int64_t pixels, int bands,
                double* low, double* high, cudaStream_t stream);

// kept[p] = valid[p] ? products[p] + offset : NaN (columns values per pixel).
void keepRows(const double* products, const unsigned char* valid, const double* offset,
              int64_t pixels, int columns, double* kept, cudaStream_t stream);

// ATGP's kept residual energy: kept[p] = valid[p] ? energy[p] : NaN, then kept[p] -= products[p]².
void keepEnergy(const double* energy, const unsigned char* valid, int64_t pixels, double* kept,
                cudaStream_t stream);
void deflateKept(const double* products, int64_t pixels, double* kept, cudaStream_t stream);

// Each block's best pixel per slot over `pixels` pixels scored from products (pixels x columns):
// best[slot * blocks + block]; returns the number of blocks.
int searchBlocks(const ScoreRule& rule, const double* products, const double* energy,
                 const unsigned char* valid, int64_t pixels, int64_t firstPixel, Candidate* best,
                 cudaStream_t stream);
int searchBlockCount(int64_t pixels);

// Each valid pixel's abundances from its products b (pixels x endmembers) into `solved`; pixels
// whose active set does not settle become invalid and count in *unsolved.
void solveAbundances(const double* gram, int endmembers, AbundanceMethod method,
                     const double* products, int64_t pixels, unsigned char* valid, double* solved,
                     unsigned long long* unsolved, cudaStream_t stream);

// energy[p] = |rows[p]|² over `bands`.
void rowEnergy(const double* rows, int64_t pixels, int bands, double* energy, cudaStream_t stream);

// The outputs: abundances (pixel-interleaved) and, when rmse is not null, sqrt(energy / bands);
// NaN for invalid pixels.
template <class Out>
void encodeAbundances(const double* solved, const double* energy, const unsigned char* valid,
                      int64_t pixels, int endmembers, int bands, Out* abundances, Out* rmse,
                      cudaStream_t stream);

// The spectral angle mapper (engine/pixels/PixelKernels.h's classify) over `pixels` rows of
// a chunk (their validity and energies |x|² from unmixingRows without a centre): `units` spectra x
// bands unit spectra on the device; `angles` may be null.
template <class Out>
void spectralAngles(const double* rows, const double* energy, const unsigned char* valid,
                    int64_t pixels, int bands, const double* units, int spectra, double maxAngle,
                    unsigned short* classes, Out* bestAngle, Out* angles, cudaStream_t stream);

// Local RX's windows (engine/pixels/LocalWindows.h) over the buffered rows of `components`
// (rowCount x width pixels, k per pixel, from image row firstRow) and their validity: the scores
// of the `scoreRows` rows from image row scoreRow, NaN where a pixel is invalid or its background
// cannot be factored.
template <class Out>
void localRxScores(const double* components, const unsigned char* valid, int k, int64_t width,
                   int64_t firstRow, int64_t rowCount, int64_t scoreRow, int64_t scoreRows,
                   int window, int guard, double shrinkage, double noise, Out* scores,
                   cudaStream_t stream);
}  // namespace hyperstream::cuda
