#pragma once
// Strips as a band-interleaved file holds them, made pixel-interleaved on the device: the
// kernels then take band-major strips with no transpose on the host's cores.

#include <cuda_runtime.h>

#include <cstdint>

namespace hyperstream::cuda {

// out[p * bands + b] = in[b * pixels + p] for samples of `sampleBytes` (1, 2, 4 or 8) bytes;
// `in` and `out` do not overlap.
void bandMajorToPixels(const void* in, int64_t pixels, int bands, int sampleBytes, void* out,
                       cudaStream_t stream);

// Band-major host samples uploaded into `staging` (device, pixels x bands samples) and written
// pixel-interleaved into `target`, on `stream`: `pixels` samples of each band, band b's at
// host + b * bandStride samples (a whole strip: bandStride = pixels; rows of one: its pixels).
void uploadBandMajor(const void* host, int64_t pixels, int bands, int sampleBytes,
                     int64_t bandStride, void* staging, void* target, cudaStream_t stream);

}  // namespace hyperstream::cuda
