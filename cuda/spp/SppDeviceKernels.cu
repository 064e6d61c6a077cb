#include "cuda/core/Launch.h"
#include "cuda/spp/SppDeviceKernels.h"

#include <cuda_pipeline.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace hyperstream::cuda {

namespace {

// Warp-wide sum and maximum (every lane gets the result).
template <class V>
__device__ V warpSum(V value) {
  for (int step = 16; step > 0; step /= 2) value += __shfl_xor_sync(0xffffffffu, value, step);
  return value;
}
__device__ double warpMax(double value) {
  for (int step = 16; step > 0; step /= 2)
    value = fmax(value, __shfl_xor_sync(0xffffffffu, value, step));
  return value;
}

// One warp per pixel, lanes over bands.
template <class T>
__global__ void sppUnitKernel(const T* __restrict__ raw, int64_t pixels, int bands,
                              const T* __restrict__ nodataValue,
                              const unsigned char* __restrict__ hasNodata, double noiseVariance,
                              float* __restrict__ unit, unsigned char* __restrict__ valid,
                              float* __restrict__ noise) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarps;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5); p < pixels;
       p += warps) {
    const T* pixel = raw + p * bands;
    bool bad = false, nonzero = false;
    double norm2 = 0, largest = 0;
    for (int b = lane; b < bands; b += 32) {
      const T v = pixel[b];
      if constexpr (std::is_floating_point_v<T>) bad |= !isfinite(v);
      bad |= hasNodata[b] && v == nodataValue[b];
      nonzero |= v != T(0);
      const double x = static_cast<double>(v);
      norm2 += x * x;
      largest = fmax(largest, fabs(x));
    }
    const bool ok = !__any_sync(0xffffffffu, bad) && __any_sync(0xffffffffu, nonzero);
    norm2 = warpSum(norm2);
    double scale = 1.0 / sqrt(norm2);
    if (ok && !isfinite(norm2)) {  // squares overflow: scale by the largest sample first
      largest = warpMax(largest);
      double scaled = 0;
      for (int b = lane; b < bands; b += 32) {
        const double x = static_cast<double>(pixel[b]) / largest;
        scaled += x * x;
      }
      scale = 1.0 / (sqrt(warpSum(scaled)) * largest);
    }
    for (int b = lane; b < bands; b += 32)
      unit[p * bands + b] = ok ? static_cast<float>(static_cast<double>(pixel[b]) * scale) : 0.0f;
    if (lane == 0) {
      valid[p] = ok;
      noise[p] = ok ? static_cast<float>(noiseVariance * scale * scale) : 0.0f;
    }
  }
}

// Where a pixel `index` along an axis of `size` pixels reads from: itself inside the image;
// outside, its reflection without repeating the edge (mirror) or nothing (-1, truncate).
__device__ int64_t sppBorder(int64_t index, int64_t size, bool mirror) {
  if (index >= 0 && index < size) return index;
  if (!mirror) return -1;
  index = index < 0 ? -index : 2 * (size - 1) - index;
  return index >= 0 && index < size ? index : -1;
}

// Alpha on a tile of kSppTileRows x kSppTileCols output pixels, one thread each. The tile and its
// halo are staged in shared memory kSppChunk bands at a time (double-buffered: the next chunk is
// copied asynchronously while this one is used), band-major so that a warp (a tile row) reads 32
// consecutive pixels of one band without bank conflicts. Each thread keeps the squared chord to
// every neighbour of its window in registers across the chunks, RowsPerPass window rows at a time
// so that at most kSppChords accumulators are live and nothing spills. So each unit spectrum
// comes from global memory once per tile (and pass) instead of once per neighbour.
constexpr int kSppTileCols = 32;
constexpr int kSppTileRows = 4;  // 128 threads: measured faster than 8 rows at windows 11-15
constexpr int kSppChunk = 8;     // bands staged at a time
constexpr int kSppChords = 128;

template <int Halo>
struct SppTile {
  static constexpr int kWindow = 2 * Halo + 1;
  static constexpr int kRegionCols = kSppTileCols + 2 * Halo;
  static constexpr int kRegionPixels = (kSppTileRows + 2 * Halo) * kRegionCols;
  // Band stride of the staged chunk: = 4 (mod 8), so that the 8 bands of 4 consecutive pixels
  // that a warp stages fall into 32 different banks.
  static constexpr int kStride = kRegionPixels + (12 - kRegionPixels % 8) % 8;
  static constexpr int kPasses = (kWindow * kWindow + kSppChords - 1) / kSppChords;
  static constexpr int kRowsPerPass = (kWindow + kPasses - 1) / kPasses;
  static constexpr size_t kSharedBytes = 2 * kSppChunk * kStride * sizeof(float);
};

// source[i] = the index in the block of the tile region's pixel i (the tile and its halo, borders
// resolved), or -1 where it is outside the block or invalid; regionNoise[i] its noise.
template <int Halo>
__device__ __forceinline__ void sppRegionSources(const unsigned char* __restrict__ valid,
                                                 const float* __restrict__ noise, int64_t width,
                                                 int64_t height, int64_t blockRow0,
                                                 int64_t blockRows, int64_t tileRow0,
                                                 int64_t tileCol0, bool mirror, int64_t* source,
                                                 float* regionNoise) {
  using Tile = SppTile<Halo>;
  for (int i = threadIdx.x; i < Tile::kRegionPixels; i += blockDim.x) {
    const int64_t r =
        sppBorder(tileRow0 - Halo + i / Tile::kRegionCols, height, mirror) - blockRow0;
    const int64_t c = sppBorder(tileCol0 - Halo + i % Tile::kRegionCols, width, mirror);
    // Rows past the block are only ever neighbours of rows past the strip's output.
    const bool inside = r >= 0 && r < blockRows && c >= 0;
    source[i] = inside && valid[r * width + c] ? r * width + c : -1;
    regionNoise[i] = source[i] >= 0 ? noise[source[i]] : 0.0f;
  }
}

// Copies bands [b0, b0 + kSppChunk) of the region into `chunk`, asynchronously; unusable pixels
// and bands past the last are zeros, which add nothing to a chord.
template <int Halo>
__device__ __forceinline__ void sppStageChunk(const float* __restrict__ unit, int bands, int b0,
                                              const int64_t* source, float* chunk) {
  using Tile = SppTile<Halo>;
  for (int e = threadIdx.x; e < Tile::kRegionPixels * kSppChunk; e += blockDim.x) {
    const int pixel = e / kSppChunk, k = e % kSppChunk;
    const int64_t from = source[pixel];
    float* to = chunk + k * Tile::kStride + pixel;
    if (from >= 0 && b0 + k < bands)
      __pipeline_memcpy_async(to, unit + from * bands + b0 + k, sizeof(float));
    else
      *to = 0.0f;
  }
  __pipeline_commit();
}

// Adds a staged chunk's bands to the squared chords from this thread's pixel (`own` in the
// region) to the window rows of this pass.
template <int Halo>
__device__ __forceinline__ void sppAddChords(
    const float* chunk, int own, int ty, int tx, int pass,
    float (&chord2)[SppTile<Halo>::kRowsPerPass][SppTile<Halo>::kWindow]) {
  using Tile = SppTile<Halo>;
  float u[kSppChunk];
#pragma unroll
  for (int k = 0; k < kSppChunk; ++k) u[k] = chunk[k * Tile::kStride + own];
#pragma unroll
  for (int i = 0; i < Tile::kRowsPerPass; ++i) {
    const int dr = pass * Tile::kRowsPerPass + i;
    if (Tile::kPasses > 1 && dr >= Tile::kWindow) break;
    const float* line = chunk + (ty + dr) * Tile::kRegionCols + tx;
#pragma unroll
    for (int dc = 0; dc < Tile::kWindow; ++dc)
#pragma unroll
      for (int k = 0; k < kSppChunk; ++k) {
        const float d = u[k] - line[k * Tile::kStride + dc];
        chord2[i][dc] = fmaf(d, d, chord2[i][dc]);
      }
  }
}

// Adds this pass's neighbours' spectral angles, less their noise, weighted by 1/distance², to the
// sums.
template <int Halo>
__device__ __forceinline__ void sppAddAngles(
    const float (&chord2)[SppTile<Halo>::kRowsPerPass][SppTile<Halo>::kWindow], int pass,
    const int64_t* source, const float* regionNoise, int ty, int tx, double& weights,
    double& weighted) {
  using Tile = SppTile<Halo>;
#pragma unroll
  for (int i = 0; i < Tile::kRowsPerPass; ++i) {
    const int dr = pass * Tile::kRowsPerPass + i;
    if (Tile::kPasses > 1 && dr >= Tile::kWindow) break;
#pragma unroll
    for (int dc = 0; dc < Tile::kWindow; ++dc) {
      if ((dr == Halo && dc == Halo) || source[(ty + dr) * Tile::kRegionCols + tx + dc] < 0)
        continue;
      const double beta = 1.0 / ((dr - Halo) * (dr - Halo) + (dc - Halo) * (dc - Halo));
      const int own = (ty + Halo) * Tile::kRegionCols + tx + Halo;
      const int other = (ty + dr) * Tile::kRegionCols + tx + dc;
      const float angle = 2.0f * asinf(fminf(1.0f, sqrtf(chord2[i][dc]) * 0.5f));
      weights += beta;
      weighted +=
          beta *
          (angle > 0 ? fmaxf(0.0f, angle - sqrtf(regionNoise[own] + regionNoise[other])) : angle);
    }
  }
}

template <int Halo>
__global__ void __launch_bounds__(kSppTileCols* kSppTileRows, 1)
    sppAlphaKernel(const float* __restrict__ unit, const unsigned char* __restrict__ valid,
                   const float* __restrict__ noise, int64_t width, int64_t height,
                   int64_t blockRow0, int64_t blockRows, int64_t row0, int64_t rows, int bands,
                   bool mirror, float* __restrict__ alpha, float* __restrict__ rho) {
  using Tile = SppTile<Halo>;
  extern __shared__ float staged[];                // [2][kSppChunk][kStride]
  __shared__ int64_t source[Tile::kRegionPixels];  // the region pixel's index in the block, or -1
  __shared__ float regionNoise[Tile::kRegionPixels];

  const int64_t tileRow0 = row0 + static_cast<int64_t>(blockIdx.y) * kSppTileRows;
  const int64_t tileCol0 = static_cast<int64_t>(blockIdx.x) * kSppTileCols;
  sppRegionSources<Halo>(valid, noise, width, height, blockRow0, blockRows, tileRow0, tileCol0,
                         mirror, source, regionNoise);
  __syncthreads();
  const int ty = threadIdx.x / kSppTileCols, tx = threadIdx.x % kSppTileCols;
  const int own = (ty + Halo) * Tile::kRegionCols + tx + Halo;
  constexpr int kChunkFloats = kSppChunk * Tile::kStride;

  double weights = 0, weighted = 0;
#pragma unroll 1
  for (int pass = 0; pass < Tile::kPasses; ++pass) {
    float chord2[Tile::kRowsPerPass][Tile::kWindow] = {};
    sppStageChunk<Halo>(unit, bands, 0, source, staged);
    for (int b0 = 0, slot = 0; b0 < bands; b0 += kSppChunk, slot ^= 1) {
      const bool more = b0 + kSppChunk < bands;
      if (more)
        sppStageChunk<Halo>(unit, bands, b0 + kSppChunk, source,
                            staged + (slot ^ 1) * kChunkFloats);
      __pipeline_wait_prior(more ? 1 : 0);
      __syncthreads();
      sppAddChords<Halo>(staged + slot * kChunkFloats, own, ty, tx, pass, chord2);
      __syncthreads();  // this buffer is used up before the next stage overwrites it
    }
    sppAddAngles<Halo>(chord2, pass, source, regionNoise, ty, tx, weights, weighted);
  }
  const int64_t row = tileRow0 + ty, col = tileCol0 + tx;
  if (row >= row0 + rows || col >= width) return;
  const int64_t i = (row - row0) * width + col;
  if (source[own] < 0) {
    alpha[i] = rho[i] = __int_as_float(0x7fc00000);  // NaN: nodata
    return;
  }
  const double a = weights > 0 ? weighted / weights : 0.0;
  alpha[i] = static_cast<float>(a);
  rho[i] = static_cast<float>((1 + sqrt(a)) * (1 + sqrt(a)));
}

template <class T, class C, class I>
__global__ void sppDisplaceKernel(const T* __restrict__ raw,
                                  const unsigned char* __restrict__ valid,
                                  const float* __restrict__ rho, I elements, int bands,
                                  const double* __restrict__ centroid, C nodata,
                                  C* __restrict__ out) {
  const I stride = static_cast<I>(gridDim.x) * blockDim.x;
  for (I e = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; e < elements; e += stride) {
    const I p = e / static_cast<I>(bands);
    const int b = static_cast<int>(e - p * static_cast<I>(bands));
    // rho is float on output; the displacement uses the same rounding as the CPU's float64
    // shrink only up to float precision (well inside the 1e-5 tolerance).
    out[e] = valid[p] ? static_cast<C>((static_cast<double>(raw[e]) - centroid[b]) /
                                           static_cast<double>(rho[p]) +
                                       centroid[b])
                      : nodata;
  }
}
}  // namespace

template <class T>
void sppUnitSpectra(const T* raw, int64_t pixels, int bands, const T* nodataValue,
                    const unsigned char* hasNodata, double noiseVariance, float* unit,
                    unsigned char* valid, float* noise, cudaStream_t stream) {
  if (pixels <= 0) return;
  sppUnitKernel<T><<<gridFor(pixels, kWarps), kThreads, 0, stream>>>(
      raw, pixels, bands, nodataValue, hasNodata, noiseVariance, unit, valid, noise);
  checkLaunch("SPP unit-spectra kernel");
}

// launch(sppAlphaKernel<H>, its shared bytes) for the H of Halos that is `halo`.
template <class Launch, int... Halos>
void launchForHalo(int halo, Launch& launch, std::integer_sequence<int, Halos...>) {
  const bool launched =
      ((halo == Halos && (launch(sppAlphaKernel<Halos>, SppTile<Halos>::kSharedBytes), true)) ||
       ...);
  if (!launched)
    throw DeviceError("SPP alpha kernel: window " + std::to_string(2 * halo + 1) +
                      " is outside 3..15");
}

void sppAlpha(const float* unit, const unsigned char* valid, const float* noise, int64_t width,
              int64_t height, int64_t blockRow0, int64_t blockRows, int64_t row0, int64_t rows,
              int bands, int halo, bool mirror, float* alpha, float* rho, cudaStream_t stream) {
  if (rows * width <= 0) return;
  const dim3 grid(static_cast<unsigned>((width + kSppTileCols - 1) / kSppTileCols),
                  static_cast<unsigned>((rows + kSppTileRows - 1) / kSppTileRows));
  const dim3 block(kSppTileCols * kSppTileRows);
  auto launch = [&](auto kernel, size_t sharedBytes) {
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(sharedBytes)),
          "SPP alpha kernel");
    kernel<<<grid, block, sharedBytes, stream>>>(unit, valid, noise, width, height, blockRow0,
                                                 blockRows, row0, rows, bands, mirror, alpha, rho);
  };
  launchForHalo(halo, launch, std::integer_sequence<int, 1, 2, 3, 4, 5, 6, 7>());
  checkLaunch("SPP alpha kernel");
}

template <class T, class C>
void sppDisplace(const T* raw, const unsigned char* valid, const float* rho, int64_t pixels,
                 int bands, const double* centroid, double nodata, C* out, cudaStream_t stream) {
  if (pixels <= 0) return;
  const int64_t elements = pixels * bands;
  if (elements < (int64_t{1} << 32))  // 32-bit index arithmetic where it fits: much faster
    sppDisplaceKernel<T, C, uint32_t><<<gridFor(elements, kThreads * 8), kThreads, 0, stream>>>(
        raw, valid, rho, static_cast<uint32_t>(elements), bands, centroid, static_cast<C>(nodata),
        out);
  else
    sppDisplaceKernel<T, C, int64_t><<<gridFor(elements, kThreads * 8), kThreads, 0, stream>>>(
        raw, valid, rho, elements, bands, centroid, static_cast<C>(nodata), out);
  checkLaunch("SPP displacement kernel");
}

// The sample types GDAL hands us.
#define HYPERSTREAM_SAMPLE_TYPE(T)                                                                 \
  template void sppUnitSpectra<T>(const T*, int64_t, int, const T*, const unsigned char*, double,  \
                                  float*, unsigned char*, float*, cudaStream_t);                   \
  template void sppDisplace<T, float>(const T*, const unsigned char*, const float*, int64_t, int,  \
                                      const double*, double, float*, cudaStream_t);                \
  template void sppDisplace<T, double>(const T*, const unsigned char*, const float*, int64_t, int, \
                                       const double*, double, double*, cudaStream_t);
HYPERSTREAM_FOR_EACH_SAMPLE_TYPE(HYPERSTREAM_SAMPLE_TYPE)
#undef HYPERSTREAM_SAMPLE_TYPE

}  // namespace hyperstream::cuda
