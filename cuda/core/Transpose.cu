#include "cuda/core/Launch.h"
#include "cuda/core/Transpose.h"

#include <cstdint>
#include <string>

namespace hyperstream::cuda {

namespace {

constexpr int kTile = 32;
constexpr int kTileRows = 8;  // threads per block: kTile x kTileRows

// One 32 x 32 tile through shared memory, so that reads (along pixels) and writes (along bands)
// both touch consecutive addresses; the padding column keeps the transposed reads off one bank.
template <class T>
__global__ void bandMajorToPixelsKernel(const T* __restrict__ in, int64_t pixels, int bands,
                                        T* __restrict__ out) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t p0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int b0 = static_cast<int>(blockIdx.y) * kTile;
  for (int j = threadIdx.y; j < kTile; j += kTileRows) {
    const int b = b0 + j;
    const int64_t p = p0 + threadIdx.x;
    if (b < bands && p < pixels) tile[j][threadIdx.x] = in[static_cast<int64_t>(b) * pixels + p];
  }
  __syncthreads();
  for (int j = threadIdx.y; j < kTile; j += kTileRows) {
    const int64_t p = p0 + j;
    const int b = b0 + static_cast<int>(threadIdx.x);
    if (b < bands && p < pixels) out[p * bands + b] = tile[threadIdx.x][j];
  }
}

template <class T>
void launch(const void* in, int64_t pixels, int bands, void* out, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((pixels + kTile - 1) / kTile),
                  static_cast<unsigned>((bands + kTile - 1) / kTile));
  bandMajorToPixelsKernel<<<grid, dim3(kTile, kTileRows), 0, stream>>>(
      static_cast<const T*>(in), pixels, bands, static_cast<T*>(out));
  checkLaunch("bandMajorToPixels");
}

}  // namespace

void bandMajorToPixels(const void* in, int64_t pixels, int bands, int sampleBytes, void* out,
                       cudaStream_t stream) {
  if (pixels < 1 || bands < 1) return;
  switch (sampleBytes) {
    case 1:
      return launch<uint8_t>(in, pixels, bands, out, stream);
    case 2:
      return launch<uint16_t>(in, pixels, bands, out, stream);
    case 4:
      return launch<uint32_t>(in, pixels, bands, out, stream);
    case 8:
      return launch<uint64_t>(in, pixels, bands, out, stream);
    default:
      throw DeviceError("internal: band-major samples of " + std::to_string(sampleBytes) +
                        " bytes");
  }
}

void uploadBandMajor(const void* host, int64_t pixels, int bands, int sampleBytes,
                     int64_t bandStride, void* staging, void* target, cudaStream_t stream) {
  const auto bandBytes = static_cast<size_t>(pixels * sampleBytes);
  check(cudaMemcpy2DAsync(staging, bandBytes, host, static_cast<size_t>(bandStride * sampleBytes),
                          bandBytes, static_cast<size_t>(bands), cudaMemcpyHostToDevice, stream),
        "upload");
  bandMajorToPixels(staging, pixels, bands, sampleBytes, target, stream);
}

}  // namespace hyperstream::cuda
