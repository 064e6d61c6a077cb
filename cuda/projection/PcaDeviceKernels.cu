#include "core/Rounding.h"
#include "cuda/core/Launch.h"
#include "cuda/core/PixelValidity.h"
#include "cuda/projection/PcaDeviceKernels.h"

#include <cstdint>
#include <string>
#include <type_traits>

namespace hyperstream::cuda {

namespace {

// One warp per pixel p < pixels, lanes over bands: visit(p, lane) says (to every lane) whether
// the pixel counts; each block's count is added to *count once.
template <class Visit>
__device__ void countByWarp(int64_t pixels, unsigned long long* count, Visit&& visit) {
  __shared__ unsigned int blockTotal;
  if (threadIdx.x == 0) blockTotal = 0;
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarps;
  unsigned int mine = 0;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5); p < pixels;
       p += warps)
    mine += visit(p, lane) ? 1 : 0;
  if (lane == 0 && mine > 0) atomicAdd(&blockTotal, mine);
  __syncthreads();
  if (threadIdx.x == 0 && blockTotal > 0)
    atomicAdd(count, static_cast<unsigned long long>(blockTotal));
}

// valid[p] by validPixel, and the count of valid pixels.
template <class T>
__global__ void markValidKernel(const T* __restrict__ raw, int64_t pixels, int bands,
                                const T* __restrict__ nodataValue,
                                const unsigned char* __restrict__ hasNodata,
                                unsigned char* __restrict__ valid, unsigned long long* count) {
  countByWarp(pixels, count, [&](int64_t p, int lane) {
    const bool ok = validPixel(raw + p * bands, bands, lane, nodataValue, hasNodata);
    if (lane == 0) valid[p] = ok;
    return ok;
  });
}

// Each pixel's pair: its validity, then its differences (zero for an invalid pair); the count of
// valid pairs.
template <class T>
__global__ void noiseDifferencesKernel(const T* __restrict__ segment, const T* __restrict__ above,
                                       int64_t first, int64_t pixels, int64_t width, int bands,
                                       int rowStep, int columnStep,
                                       const T* __restrict__ nodataValue,
                                       const unsigned char* __restrict__ hasNodata,
                                       double* __restrict__ out, unsigned long long* count) {
  countByWarp(pixels, count, [&](int64_t p, int lane) {
    const int64_t i = first + p;
    const int64_t column = i % width - columnStep;
    const int64_t q = i - rowStep * width - columnStep;  // the partner, in the segment
    const T* pixel = segment + i * bands;
    const T* partner = nullptr;
    if (column >= 0 && column < width)
      partner = q >= 0 ? segment + q * bands : (above ? above + (q + width) * bands : nullptr);
    const bool ok = partner && validPixel(pixel, bands, lane, nodataValue, hasNodata) &&
                    validPixel(partner, bands, lane, nodataValue, hasNodata);
    double* x = out + p * bands;
    for (int b = lane; b < bands; b += 32)
      x[b] = ok ? static_cast<double>(partner[b]) - static_cast<double>(pixel[b]) : 0.0;
    return ok;
  });
}

// Each block takes kPixelsPerBlock pixels; per slice of 32 rows its warps go over the pixels
// (lanes over rows, coalesced), optionally writing out = in - center, and reduce sum/min/max
// per row into the block's partials.
template <class T, class C, bool kWrite>
__global__ void sweepKernel(const T* __restrict__ in, int64_t pixels, int rows,
                            const unsigned char* __restrict__ valid,
                            const double* __restrict__ center, C* __restrict__ out,
                            double* __restrict__ partials) {
  __shared__ double shared[3][kWarps][32];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kPixelsPerBlock;
  const int64_t last = min(pixels, first + kPixelsPerBlock);
  const int blocks = gridDim.x;
  for (int r0 = 0; r0 < rows; r0 += 32) {
    const int r = r0 + lane;
    double sum = 0.0, lo = kInfinity, hi = -kInfinity;
    if (r < rows) {
      const double c = center ? center[r] : 0.0;
#pragma unroll 4
      for (int64_t p = first + warp; p < last; p += kWarps) {
        const int64_t i = p * rows + r;
        const double v = static_cast<double>(in[i]);
        const bool ok = valid[p];
        const double x = ok ? v - c : 0.0;
        if constexpr (kWrite) out[i] = static_cast<C>(x);
        if (ok) {
          sum += x;
          lo = fmin(lo, v);
          hi = fmax(hi, v);
        }
      }
    }
    if (partials) {
      shared[0][warp][lane] = sum;
      shared[1][warp][lane] = lo;
      shared[2][warp][lane] = hi;
      __syncthreads();
      if (warp == 0 && r < rows) {
        for (int w = 1; w < kWarps; ++w) {
          sum += shared[0][w][lane];
          lo = fmin(lo, shared[1][w][lane]);
          hi = fmax(hi, shared[2][w][lane]);
        }
        partials[(0 * static_cast<int64_t>(blocks) + blockIdx.x) * rows + r] = sum;
        partials[(1 * static_cast<int64_t>(blocks) + blockIdx.x) * rows + r] = lo;
        partials[(2 * static_cast<int64_t>(blocks) + blockIdx.x) * rows + r] = hi;
      }
      __syncthreads();
    }
  }
}

// The projection, fused: out[p, k] = valid[p] ? Σ_b C(raw[p, b] - center[b]) · weights[b, k] : 0.
// A block takes kProjectPixels pixels, one per thread. Their samples come into shared memory a
// chunk of bands at a time (each warp reads whole runs of a pixel's bands), centred in C; each
// thread keeps kProjectComponents sums in registers, summing the bands in order, and more
// components take further rounds over the bands. Memory-bound: the strip is read once per round.
// The first round also finds the invalid pixels (a warp stages one pixel's chunk of bands, so a
// warp vote flags it): no separate pass over the strip marks them.
constexpr int kProjectPixels = 128;
constexpr int kProjectBands = 32;
constexpr int kProjectComponents = 16;
static_assert(kProjectBands == 32 && kProjectPixels % 32 == 0, "a warp stages one pixel's bands");

template <class T, class C>
__global__ void __launch_bounds__(kProjectPixels)
    projectKernel(const T* __restrict__ raw, int64_t pixels, int bands,
                  const T* __restrict__ nodataValue, const unsigned char* __restrict__ hasNodata,
                  unsigned char* __restrict__ valid, const double* __restrict__ center,
                  const C* __restrict__ weights, int components, C invalid, C* __restrict__ out) {
  __shared__ C samples[kProjectPixels][kProjectBands + 1];  // +1: no bank conflicts
  __shared__ C chunkWeights[kProjectBands][kProjectComponents];
  __shared__ bool invalidPixel[kProjectPixels];
  const int t = threadIdx.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kProjectPixels;
  const int64_t p = first + t;
  const int blockPixels = static_cast<int>(min(int64_t{kProjectPixels}, pixels - first));
  const int lane = t % kProjectBands;
  const bool checking = nodataValue != nullptr;
  invalidPixel[t] = false;
  for (int k0 = 0; k0 < components; k0 += kProjectComponents) {
    const int count = min(kProjectComponents, components - k0);
    C sum[kProjectComponents] = {};
    for (int b0 = 0; b0 < bands; b0 += kProjectBands) {
      const int chunk = min(kProjectBands, bands - b0);
      // Each thread stages one band (its lane) of every fourth pixel, so a warp takes a pixel's
      // whole chunk of bands at once.
      const bool bandInside = lane < chunk;
      const double bandCenter = bandInside ? center[b0 + lane] : 0.0;
      const bool checkBand = checking && k0 == 0;
      const bool bandHasNodata = checkBand && bandInside && hasNodata[b0 + lane];
      const T bandNodata = bandHasNodata ? nodataValue[b0 + lane] : T{};
      __syncthreads();  // every thread is done with the previous chunk
      for (int q = t / kProjectBands; q < kProjectPixels; q += kProjectPixels / kProjectBands) {
        const bool inside = bandInside && q < blockPixels;
        const T v = inside ? raw[(first + q) * bands + b0 + lane] : T{};
        samples[q][lane] = inside ? static_cast<C>(static_cast<double>(v) - bandCenter) : C(0);
        if (checkBand) {
          bool wrong = inside && bandHasNodata && v == bandNodata;
          if constexpr (std::is_floating_point_v<T>) wrong |= inside && !isfinite(v);
          if (__any_sync(0xffffffffu, wrong) && lane == 0) invalidPixel[q] = true;
        }
      }
      for (int e = t; e < kProjectBands * kProjectComponents; e += kProjectPixels) {
        const int b = e / kProjectComponents, k = e % kProjectComponents;
        chunkWeights[b][k] =
            b < chunk && k < count ? weights[(b0 + b) * components + k0 + k] : C(0);
      }
      __syncthreads();
      for (int b = 0; b < chunk; ++b) {
        const C x = samples[t][b];
#pragma unroll
        for (int k = 0; k < kProjectComponents; ++k) sum[k] += x * chunkWeights[b][k];
      }
    }
    if (t < blockPixels) {
      const bool keep = !invalidPixel[t];
      if (k0 == 0) valid[p] = keep;
#pragma unroll
      for (int k = 0; k < kProjectComponents; ++k)
        if (k < count) out[p * components + k0 + k] = keep ? sum[k] : invalid;
    }
  }
}

// One block per row: a tree over the blocks' partials, in a fixed order (deterministic).
__global__ void mergeKernel(const double* __restrict__ partials, int blocks, int rows, double* sum,
                            double* minimum, double* maximum) {
  __shared__ double shared[3][kThreads];
  const int r = blockIdx.x;
  const int t = threadIdx.x;
  double s = 0.0, lo = kInfinity, hi = -kInfinity;
  for (int i = t; i < blocks; i += kThreads) {
    s += partials[(0 * static_cast<int64_t>(blocks) + i) * rows + r];
    lo = fmin(lo, partials[(1 * static_cast<int64_t>(blocks) + i) * rows + r]);
    hi = fmax(hi, partials[(2 * static_cast<int64_t>(blocks) + i) * rows + r]);
  }
  shared[0][t] = s;
  shared[1][t] = lo;
  shared[2][t] = hi;
  __syncthreads();
  for (int step = kThreads / 2; step > 0; step /= 2) {
    if (t < step) {
      shared[0][t] += shared[0][t + step];
      shared[1][t] = fmin(shared[1][t], shared[1][t + step]);
      shared[2][t] = fmax(shared[2][t], shared[2][t + step]);
    }
    __syncthreads();
  }
  if (t == 0) {
    if (sum) sum[r] += shared[0][0];
    minimum[r] = fmin(minimum[r], shared[1][0]);
    maximum[r] = fmax(maximum[r], shared[2][0]);
  }
}

__global__ void encodeByteKernel(const float* __restrict__ values, int64_t pixels, int components,
                                 const unsigned char* __restrict__ valid,
                                 const double* __restrict__ minimum,
                                 const double* __restrict__ scale, double low, unsigned char nodata,
                                 unsigned char* __restrict__ out) {
  const int64_t count = pixels * components;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t p = i / components;
    const int k = static_cast<int>(i - p * components);
    if (!valid[p]) {
      out[i] = nodata;
      continue;
    }
    // round() rounds half away from zero, like the CPU backend's std::round.
    const double scaled = round(low + (static_cast<double>(values[i]) - minimum[k]) * scale[k]);
    out[i] = static_cast<unsigned char>(fmin(fmax(scaled, 0.0), 255.0));
  }
}

// One thread per output value; a pixel's threads read its components together (cached).
template <class C, class Out>
__global__ void rebuildKernel(const C* __restrict__ values, int64_t pixels, int components,
                              const unsigned char* __restrict__ valid,
                              const double* __restrict__ restore, const double* __restrict__ offset,
                              int outputs, double nodata, bool avoidNodata, Out* __restrict__ out) {
  const int64_t count = pixels * outputs;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t p = i / outputs;
    const int j = static_cast<int>(i - p * outputs);
    if (!valid[p]) {
      out[i] = static_cast<Out>(nodata);
      continue;
    }
    const C* pixel = values + p * components;
    double sum = offset[j];
    for (int k = 0; k < components; ++k)
      sum += static_cast<double>(pixel[k]) * restore[static_cast<int64_t>(k) * outputs + j];
    out[i] = toSample<Out>(sum, nodata, avoidNodata);
  }
}

// One thread per pixel: its RX score, or each target's ACE score (DetectionScores), in float64
// (the sum of squares in order; the CPU kernels sum in eight lanes: the last bits may differ).
template <class Out>
__global__ void scoresKernel(const double* __restrict__ values, int64_t pixels, int components,
                             int whitened, const double* __restrict__ targetPower, int targets,
                             const unsigned char* __restrict__ valid, double nodata,
                             Out* __restrict__ out) {
  const int outputs = targets > 0 ? targets : 1;
  for (int64_t p = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; p < pixels;
       p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Out* pixelOut = out + p * outputs;
    if (!valid[p]) {
      for (int t = 0; t < outputs; ++t) pixelOut[t] = static_cast<Out>(nodata);
      continue;
    }
    const double* pixel = values + p * components;
    double distance = 0;
    for (int k = 0; k < whitened; ++k) distance = __fma_rn(pixel[k], pixel[k], distance);
    if (targets == 0) {
      pixelOut[0] = static_cast<Out>(distance);
      continue;
    }
    for (int t = 0; t < targets; ++t) {
      const double filtered = pixel[whitened + t];
      pixelOut[t] =
          static_cast<Out>(distance > 0 ? filtered * filtered * targetPower[t] / distance : 0.0);
    }
  }
}

}  // namespace

template <class C, class Out>
void rebuild(const C* values, int64_t pixels, int components, const unsigned char* valid,
             const double* restore, const double* offset, int outputs, double nodata,
             bool avoidNodata, Out* out, cudaStream_t stream) {
  if (pixels <= 0 || outputs <= 0) return;
  rebuildKernel<C, Out><<<gridFor(pixels * outputs, kThreads * 8), kThreads, 0, stream>>>(
      values, pixels, components, valid, restore, offset, outputs, nodata, avoidNodata, out);
  checkLaunch("rebuild kernel");
}

template <class Out>
void scores(const double* values, int64_t pixels, int components, int whitened,
            const double* targetPower, int targets, const unsigned char* valid, double nodata,
            Out* out, cudaStream_t stream) {
  if (pixels <= 0) return;
  scoresKernel<Out><<<gridFor(pixels, kThreads), kThreads, 0, stream>>>(
      values, pixels, components, whitened, targetPower, targets, valid, nodata, out);
  checkLaunch("detection scores kernel");
}

int reductionBlocks(int64_t pixels) {
  return static_cast<int>((pixels + kPixelsPerBlock - 1) / kPixelsPerBlock);
}

template <class T>
void markValid(const T* raw, int64_t pixels, int bands, const T* nodataValue,
               const unsigned char* hasNodata, unsigned char* valid, unsigned long long* count,
               cudaStream_t stream) {
  if (pixels <= 0) return;
  markValidKernel<T><<<gridFor(pixels, kWarps * 16), kThreads, 0, stream>>>(
      raw, pixels, bands, nodataValue, hasNodata, valid, count);
  checkLaunch("valid-pixel kernel");
}

template <class T>
void centre(const T* raw, int64_t pixels, int bands, const unsigned char* valid,
            const double* center, double* out, double* partials, cudaStream_t stream) {
  if (pixels <= 0) return;
  sweepKernel<T, double, true><<<reductionBlocks(pixels), kThreads, 0, stream>>>(
      raw, pixels, bands, valid, center, out, partials);
  checkLaunch("centring kernel");
}

template <class T, class C>
void project(const T* raw, int64_t pixels, int bands, const T* nodataValue,
             const unsigned char* hasNodata, unsigned char* valid, const double* center,
             const C* weights, int components, double invalid, C* out, cudaStream_t stream) {
  if (pixels <= 0 || components <= 0) return;
  projectKernel<T, C><<<static_cast<unsigned>((pixels + kProjectPixels - 1) / kProjectPixels),
                        kProjectPixels, 0, stream>>>(raw, pixels, bands, nodataValue, hasNodata,
                                                     valid, center, weights, components,
                                                     static_cast<C>(invalid), out);
  checkLaunch("projection kernel");
}

template <class C>
void rangePartials(const C* m, int64_t pixels, int rows, const unsigned char* valid,
                   double* partials, cudaStream_t stream) {
  if (pixels <= 0) return;
  sweepKernel<C, C, false><<<reductionBlocks(pixels), kThreads, 0, stream>>>(
      m, pixels, rows, valid, nullptr, nullptr, partials);
  checkLaunch("range kernel");
}

void mergePartials(const double* partials, int blocks, int rows, double* sum, double* minimum,
                   double* maximum, cudaStream_t stream) {
  if (blocks <= 0) return;
  mergeKernel<<<rows, kThreads, 0, stream>>>(partials, blocks, rows, sum, minimum, maximum);
  checkLaunch("merge kernel");
}

void encodeByte(const float* values, int64_t pixels, int components, const unsigned char* valid,
                const double* minimum, const double* scale, double low, unsigned char nodata,
                unsigned char* out, cudaStream_t stream) {
  if (pixels <= 0) return;
  encodeByteKernel<<<gridFor(pixels * components, kThreads * 8), kThreads, 0, stream>>>(
      values, pixels, components, valid, minimum, scale, low, nodata, out);
  checkLaunch("Byte encoding kernel");
}

// Exact Gram matrices of 8- and 16-bit integer pixels on int8 tensor cores: a deviation
// d = x - shift (|d| <= 65535) is 2^14 a + 2^7 b + c with int8 digits a in [-4, 4] and b, c in
// [-64, 63]. One 32 x 32 tile of (pixels x bands) per block goes through shared memory, so both
// the pixel-interleaved read and the band-major digit writes are coalesced.
template <class T>
__global__ void splitDigitsKernel(const T* __restrict__ raw, int64_t pixels, int bands,
                                  const unsigned char* __restrict__ valid,
                                  const double* __restrict__ shift, int64_t ld, int64_t depth,
                                  int paddedBands, int8_t* __restrict__ planes) {
  __shared__ int tile[32][33];
  const int64_t p0 = static_cast<int64_t>(blockIdx.x) * 32;
  const int b0 = static_cast<int>(blockIdx.y) * 32;
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const int64_t p = p0 + k;
    const int b = b0 + static_cast<int>(threadIdx.x);
    int d = 0;
    if (p < pixels && b < bands && valid[p])
      d = static_cast<int>(raw[p * bands + b]) - static_cast<int>(shift[b]);
    tile[k][threadIdx.x] = d;
  }
  __syncthreads();
  const size_t planeSize = static_cast<size_t>(paddedBands) * ld;
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const int b = b0 + k;
    const int64_t p = p0 + threadIdx.x;
    if (b >= paddedBands || p >= depth) continue;
    const int d = tile[threadIdx.x][k];
    const int c = ((d + 64) & 127) - 64;  // d - c is a multiple of 128
    const int high = (d - c) / 128;
    const int middle = ((high + 64) & 127) - 64;
    const int top = (high - middle) / 128;
    const size_t at = static_cast<size_t>(b) * ld + p;
    planes[at] = static_cast<int8_t>(top);
    planes[planeSize + at] = static_cast<int8_t>(middle);
    planes[2 * planeSize + at] = static_cast<int8_t>(c);
  }
}

// gram[j][i] += Σ d_i d_j from the digit products of one GEMM of the stacked planes [a; b; c] with
// themselves (3 paddedBands square, column-major: block (x, y) holds Σ X_i Y_j), exact in 64 bits,
// then rounded once to float64. d = 2^14 a + 2^7 b + c, so d_i d_j = Σ_xy 2^(7 (4 - x - y)) X_i
// Y_j.
__global__ void combineDigitsKernel(const int32_t* __restrict__ products, int bands,
                                    int paddedBands, double* __restrict__ gram) {
  const int64_t index = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= static_cast<int64_t>(bands) * bands) return;
  const int i = static_cast<int>(index % bands);
  const int j = static_cast<int>(index / bands);
  const int64_t rows = 3 * int64_t{paddedBands};
  int64_t value = 0;
  for (int x = 0; x < 3; ++x)
    for (int y = 0; y < 3; ++y)
      value += static_cast<int64_t>(
                   products[(y * int64_t{paddedBands} + j) * rows + x * int64_t{paddedBands} + i]) *
               (int64_t{1} << (7 * (4 - x - y)));
  gram[static_cast<size_t>(j) * bands + i] += static_cast<double>(value);
}

template <class T>
void bandStatistics(const T* raw, int64_t pixels, int bands, const unsigned char* valid,
                    const double* center, double* partials, cudaStream_t stream) {
  if (pixels <= 0) return;
  sweepKernel<T, double, false><<<reductionBlocks(pixels), kThreads, 0, stream>>>(
      raw, pixels, bands, valid, center, nullptr, partials);
  checkLaunch("statistics kernel");
}

template <class T>
void splitDigits(const T* raw, int64_t pixels, int bands, const unsigned char* valid,
                 const double* shift, int64_t ld, int64_t depth, int paddedBands, int8_t* planes,
                 cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((depth + 31) / 32),
                  static_cast<unsigned>((paddedBands + 31) / 32));
  splitDigitsKernel<T><<<grid, dim3(32, 8), 0, stream>>>(raw, pixels, bands, valid, shift, ld,
                                                         depth, paddedBands, planes);
  checkLaunch("digit kernel");
}

template <class T>
void noiseDifferences(const T* segment, const T* above, int64_t first, int64_t pixels,
                      int64_t width, int bands, int rowStep, int columnStep, const T* nodataValue,
                      const unsigned char* hasNodata, double* out, unsigned long long* count,
                      cudaStream_t stream) {
  if (pixels <= 0) return;
  noiseDifferencesKernel<T><<<gridFor(pixels, kWarps), kThreads, 0, stream>>>(
      segment, above, first, pixels, width, bands, rowStep, columnStep, nodataValue, hasNodata, out,
      count);
  checkLaunch("noise differences kernel");
}

void combineDigits(const int32_t* products, int bands, int paddedBands, double* gram,
                   cudaStream_t stream) {
  combineDigitsKernel<<<gridFor(int64_t{bands} * bands, kThreads), kThreads, 0, stream>>>(
      products, bands, paddedBands, gram);
  checkLaunch("digit combining kernel");
}

// The sample types GDAL hands us, each to float64 (statistics) and float32/float64 (projection).
#define HYPERSTREAM_SAMPLE_TYPE(T)                                                                \
  template void markValid<T>(const T*, int64_t, int, const T*, const unsigned char*,              \
                             unsigned char*, unsigned long long*, cudaStream_t);                  \
  template void centre<T>(const T*, int64_t, int, const unsigned char*, const double*, double*,   \
                          double*, cudaStream_t);                                                 \
  template void project<T, float>(const T*, int64_t, int, const T*, const unsigned char*,         \
                                  unsigned char*, const double*, const float*, int, double,       \
                                  float*, cudaStream_t);                                          \
  template void project<T, double>(const T*, int64_t, int, const T*, const unsigned char*,        \
                                   unsigned char*, const double*, const double*, int, double,     \
                                   double*, cudaStream_t);                                        \
  template void noiseDifferences<T>(const T*, const T*, int64_t, int64_t, int64_t, int, int, int, \
                                    const T*, const unsigned char*, double*, unsigned long long*, \
                                    cudaStream_t);
HYPERSTREAM_FOR_EACH_SAMPLE_TYPE(HYPERSTREAM_SAMPLE_TYPE)
#undef HYPERSTREAM_SAMPLE_TYPE
template void rangePartials<float>(const float*, int64_t, int, const unsigned char*, double*,
                                   cudaStream_t);
template void rangePartials<double>(const double*, int64_t, int, const unsigned char*, double*,
                                    cudaStream_t);
#define HYPERSTREAM_DIGIT_TYPE(T)                                                              \
  template void bandStatistics<T>(const T*, int64_t, int, const unsigned char*, const double*, \
                                  double*, cudaStream_t);                                      \
  template void splitDigits<T>(const T*, int64_t, int, const unsigned char*, const double*,    \
                               int64_t, int64_t, int, int8_t*, cudaStream_t);
#define HYPERSTREAM_REBUILD_TYPE(Out)                                                       \
  template void rebuild<float, Out>(const float*, int64_t, int, const unsigned char*,       \
                                    const double*, const double*, int, double, bool, Out*,  \
                                    cudaStream_t);                                          \
  template void rebuild<double, Out>(const double*, int64_t, int, const unsigned char*,     \
                                     const double*, const double*, int, double, bool, Out*, \
                                     cudaStream_t);
HYPERSTREAM_FOR_EACH_SAMPLE_TYPE(HYPERSTREAM_REBUILD_TYPE)
#undef HYPERSTREAM_REBUILD_TYPE
template void scores<float>(const double*, int64_t, int, int, const double*, int,
                            const unsigned char*, double, float*, cudaStream_t);
template void scores<double>(const double*, int64_t, int, int, const double*, int,
                             const unsigned char*, double, double*, cudaStream_t);
HYPERSTREAM_DIGIT_TYPE(uint8_t)
HYPERSTREAM_DIGIT_TYPE(uint16_t)
HYPERSTREAM_DIGIT_TYPE(int16_t)
#undef HYPERSTREAM_DIGIT_TYPE

}  // namespace hyperstream::cuda
