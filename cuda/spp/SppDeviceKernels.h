#pragma once
// SPP's device kernels (Zortea & Plaza's alpha, rho and displacement; see engine/spp/SppJob.h).

#include <cuda_runtime.h>

#include <cstdint>

namespace hyperstream::cuda {

// SPP: unit spectra (float32), validity (finite, not nodata, not all zero) and noise
// (noiseVariance / |y|², 0 where invalid) of `pixels` pixel-interleaved spectra.
template <class T>
void sppUnitSpectra(const T* raw, int64_t pixels, int bands, const T* nodataValue,
                    const unsigned char* hasNodata, double noiseVariance, float* unit,
                    unsigned char* valid, float* noise, cudaStream_t stream);

// SPP: alpha and rho of the output rows [row0, row0 + rows) of an image `width` x `height`, from
// the unit spectra of block rows [blockRow0, blockRow0 + blockRows) (which hold the halo rows).
// Windows 3..15 (halo 1..7); a tile of output pixels and its halo are staged in shared memory.
// Each angle is less the pair's noise, sqrt(noise_p + noise_q), but not below 0.
void sppAlpha(const float* unit, const unsigned char* valid, const float* noise, int64_t width,
              int64_t height, int64_t blockRow0, int64_t blockRows, int64_t row0, int64_t rows,
              int bands, int halo, bool mirror, float* alpha, float* rho, cudaStream_t stream);

// SPP: out = (y - c) / rho + c for the valid pixels among `pixels` spectra, nodata elsewhere.
template <class T, class C>
void sppDisplace(const T* raw, const unsigned char* valid, const float* rho, int64_t pixels,
                 int bands, const double* centroid, double nodata, C* out, cudaStream_t stream);

}  // namespace hyperstream::cuda
