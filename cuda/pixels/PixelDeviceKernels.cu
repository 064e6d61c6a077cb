#include "cuda/core/Launch.h"
#include "cuda/core/PixelValidity.h"
#include "cuda/pixels/PixelDeviceKernels.h"

#include <algorithm>
#include <cmath>

namespace hyperstream::cuda {

namespace {

constexpr int kSearchThreads = 256;

// A warp per pixel: the bands' validity (finite, not nodata), then the centred row.
template <class T>
__global__ void unmixingRowsKernel(const T* __restrict__ raw, int64_t pixels, int bands,
                                   const T* __restrict__ nodataValue,
                                   const unsigned char* __restrict__ hasNodata,
                                   const double* __restrict__ center, double* __restrict__ rows,
                                   unsigned char* __restrict__ valid, double* __restrict__ weight,
                                   double* __restrict__ energy) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarps;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5); p < pixels;
       p += warps) {
    const T* pixel = raw + p * bands;
    const bool bad = !validPixel(pixel, bands, lane, nodataValue, hasNodata);
    double sum = 0;
    for (int b = lane; b < bands; b += 32) {
      const double d = bad ? 0.0 : static_cast<double>(pixel[b]) - (center ? center[b] : 0.0);
      rows[p * bands + b] = d;
      sum += d * d;
    }
    for (int offset = 16; offset > 0; offset /= 2)
      sum += __shfl_down_sync(0xFFFFFFFFu, sum, offset);
    if (lane == 0) {
      valid[p] = bad ? 0 : 1;
      weight[p] = bad ? 0.0 : 1.0;
      energy[p] = sum;
    }
  }
}

// A block per band: the smallest and largest of its values over the valid pixels (+inf and -inf
// when there is none).
__global__ void bandRangesKernel(const double* __restrict__ rows,
                                 const unsigned char* __restrict__ valid, int64_t pixels, int bands,
                                 double* __restrict__ low, double* __restrict__ high) {
  __shared__ double lows[kThreads], highs[kThreads];
  const int b = blockIdx.x;
  double least = __builtin_huge_val(), most = -__builtin_huge_val();
  for (int64_t p = threadIdx.x; p < pixels; p += blockDim.x)
    if (valid[p]) {
      const double v = rows[p * bands + b];
      least = fmin(least, v);
      most = fmax(most, v);
    }
  lows[threadIdx.x] = least;
  highs[threadIdx.x] = most;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      lows[threadIdx.x] = fmin(lows[threadIdx.x], lows[threadIdx.x + half]);
      highs[threadIdx.x] = fmax(highs[threadIdx.x], highs[threadIdx.x + half]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    low[b] = lows[0];
    high[b] = highs[0];
  }
}

__global__ void keepRowsKernel(const double* __restrict__ products,
                               const unsigned char* __restrict__ valid,
                               const double* __restrict__ offset, int64_t pixels, int columns,
                               double* __restrict__ kept) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       e < pixels * columns; e += stride) {
    const int64_t p = e / columns;
    kept[e] = valid[p] ? products[e] + offset[e - p * columns] : __builtin_nan("");
  }
}

__global__ void keepEnergyKernel(const double* __restrict__ energy,
                                 const unsigned char* __restrict__ valid, int64_t pixels,
                                 double* __restrict__ kept) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < pixels;
       p += stride)
    kept[p] = valid[p] ? energy[p] : __builtin_nan("");
}

__global__ void deflateKeptKernel(const double* __restrict__ products, int64_t pixels,
                                  double* __restrict__ kept) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < pixels;
       p += stride)
    kept[p] -= products[p] * products[p];
}

__device__ bool beats(double score, int64_t pixel, double otherScore, int64_t otherPixel) {
  if (pixel < 0) return false;
  if (otherPixel < 0) return true;
  return score > otherScore || (score == otherScore && pixel < otherPixel);
}

// A thread per pixel, then a reduction over the block per slot (largest score, lowest pixel).
__global__ void searchKernel(ScoreRule rule, const double* __restrict__ products,
                             const double* __restrict__ energy,
                             const unsigned char* __restrict__ valid, int64_t pixels,
                             int64_t firstPixel, Candidate* __restrict__ best) {
  __shared__ double scores[kSearchThreads];
  __shared__ int64_t at[kSearchThreads];
  const int64_t p = static_cast<int64_t>(blockIdx.x) * kSearchThreads + threadIdx.x;
  const bool mine = p < pixels && valid[p];
  for (int slot = 0; slot < rule.scores; ++slot) {
    double score = mine ? pixelScore(rule, slot, products + p * rule.columns, energy[p]) : -1;
    scores[threadIdx.x] = score;
    at[threadIdx.x] = mine && score >= 0 ? firstPixel + p : -1;
    __syncthreads();
    for (int half = kSearchThreads / 2; half > 0; half /= 2) {
      if (threadIdx.x < half && beats(scores[threadIdx.x + half], at[threadIdx.x + half],
                                      scores[threadIdx.x], at[threadIdx.x])) {
        scores[threadIdx.x] = scores[threadIdx.x + half];
        at[threadIdx.x] = at[threadIdx.x + half];
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      Candidate c;
      c.score = scores[0];
      c.pixel = at[0];
      best[static_cast<int64_t>(slot) * gridDim.x + blockIdx.x] = c;
    }
    __syncthreads();
  }
}

// A thread per pixel, the same active-set solver as the CPU's.
template <int MaxCount>
__global__ void solveKernel(const double* __restrict__ gram, int endmembers, AbundanceMethod method,
                            const double* __restrict__ products, int64_t pixels,
                            unsigned char* __restrict__ valid, double* __restrict__ solved,
                            unsigned long long* unsolved) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < pixels;
       p += stride) {
    if (!valid[p]) continue;
    AbundanceSolver<MaxCount> solver(gram, endmembers, method);
    if (solver.solve(products + p * endmembers, solved + p * endmembers)) continue;
    valid[p] = 0;
    atomicAdd(unsolved, 1ull);
  }
}

__global__ void rowEnergyKernel(const double* __restrict__ rows, int64_t pixels, int bands,
                                double* __restrict__ energy) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarps;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5); p < pixels;
       p += warps) {
    double sum = 0;
    for (int b = lane; b < bands; b += 32) sum += rows[p * bands + b] * rows[p * bands + b];
    for (int offset = 16; offset > 0; offset /= 2)
      sum += __shfl_down_sync(0xFFFFFFFFu, sum, offset);
    if (lane == 0) energy[p] = sum;
  }
}

template <class Out>
__global__ void encodeKernel(const double* __restrict__ solved, const double* __restrict__ energy,
                             const unsigned char* __restrict__ valid, int64_t pixels,
                             int endmembers, int bands, Out* __restrict__ abundances,
                             Out* __restrict__ rmse) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const Out nan = static_cast<Out>(__builtin_nan(""));
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       e < pixels * endmembers; e += stride) {
    const int64_t p = e / endmembers;
    abundances[e] = valid[p] ? static_cast<Out>(solved[e]) : nan;
    if (rmse && e % endmembers == 0)
      rmse[p] = valid[p] ? static_cast<Out>(sqrt(energy[p] / bands)) : nan;
  }
}

// A warp per pixel: its direction x/|x| against each unit spectrum, |u - s|² summed over the
// lanes, the angle 2 asin(|u - s|/2) and the nearest spectrum.
// Local RX (engine/pixels/LocalWindows.h's WindowScorer, in the same order): a warp per pixel, its
// mean (lanes take components), its covariance's lower triangle (lanes take entries, each summed
// over the background in image order) in the warp's shared memory, then lane 0 factors and
// whitens.
struct WindowGeometry {
  int k;
  int64_t width, firstRow, rowCount, scoreRow, pixels;
  int halo, guardHalo;
  double shrinkage, noise;
};

// Calls f(y) for each background pixel of (row, column), rows then columns in image order.
template <class F>
__device__ void forEachBackground(const double* __restrict__ components,
                                  const unsigned char* __restrict__ valid, const WindowGeometry& g,
                                  int64_t row, int64_t column, F&& f) {
  const int64_t r0 = max(g.firstRow, row - g.halo);
  const int64_t r1 = min(g.firstRow + g.rowCount - 1, row + g.halo);
  const int64_t c0 = max(int64_t{0}, column - g.halo);
  const int64_t c1 = min(g.width - 1, column + g.halo);
  for (int64_t r = r0; r <= r1; ++r) {
    const bool guardRow = llabs(r - row) <= g.guardHalo;
    const int64_t first = (r - g.firstRow) * g.width;
    for (int64_t c = c0; c <= c1; ++c) {
      if (guardRow && llabs(c - column) <= g.guardHalo) continue;
      if (!valid[first + c]) continue;
      f(components + (first + c) * g.k);
    }
  }
}

// Lane 0: C + εI factored and y - m whitened (mean, c and d in shared memory); NaN when singular.
__device__ double factorAndWhiten(double* c, const double* mean, double* d, const double* y, int k,
                                  int64_t n, double shrinkage, double noise) {
  const double scale = 1.0 / static_cast<double>(n - 1);
  double trace = 0;
  for (int i = 0; i < k; ++i) {
    for (int j = 0; j <= i; ++j) c[i * k + j] *= scale;
    trace += c[i * k + i];
  }
  const double epsilon = shrinkage * trace / k + noise;
  double largest = 0;
  for (int i = 0; i < k; ++i) {
    c[i * k + i] += epsilon;
    largest = fmax(largest, c[i * k + i]);
  }
  if (!(largest > 0)) return __builtin_nan("");
  if (n <= k && !(epsilon > 0)) return __builtin_nan("");  // spans at most n - 1 of k dimensions
  for (int j = 0; j < k; ++j) {
    double pivot = c[j * k + j];
    for (int m = 0; m < j; ++m) pivot -= c[j * k + m] * c[j * k + m];
    if (!(pivot > largest / kWindowLargestCondition)) return __builtin_nan("");
    if (!(pivot > c[j * k + j] * kWindowLeastPivotShare)) return __builtin_nan("");
    c[j * k + j] = sqrt(pivot);
    for (int i = j + 1; i < k; ++i) {
      double sum = c[i * k + j];
      for (int m = 0; m < j; ++m) sum -= c[i * k + m] * c[j * k + m];
      c[i * k + j] = sum / c[j * k + j];
    }
  }
  double square = 0;
  for (int i = 0; i < k; ++i) {
    double sum = y[i] - mean[i];
    for (int m = 0; m < i; ++m) sum -= c[i * k + m] * d[m];
    d[i] = sum / c[i * k + i];
    square += d[i] * d[i];
  }
  return square;
}

template <class Out>
__global__ void localRxKernel(const double* __restrict__ components,
                              const unsigned char* __restrict__ valid, WindowGeometry g,
                              Out* __restrict__ scores) {
  extern __shared__ double shared[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warpsPerBlock = blockDim.x >> 5;
  const int k = g.k, entries = k * (k + 1) / 2;
  double* mean = shared + static_cast<int64_t>(warp) * (k * k + 2 * k);
  double* c = mean + k;
  double* d = c + k * k;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * warpsPerBlock;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * warpsPerBlock + warp; p < g.pixels;
       p += warps) {
    const int64_t row = g.scoreRow + p / g.width, column = p % g.width;
    const double* y = components + ((row - g.firstRow) * g.width + column) * k;
    if (!valid[(row - g.firstRow) * g.width + column]) {
      if (lane == 0) scores[p] = static_cast<Out>(__builtin_nan(""));
      continue;
    }
    int64_t n = 0;
    double sum0 = 0, sum1 = 0;  // components lane and lane + 32
    forEachBackground(components, valid, g, row, column, [&](const double* x) {
      ++n;
      if (lane < k) sum0 += x[lane];
      if (lane + 32 < k) sum1 += x[lane + 32];
    });
    if (n < 2) {
      if (lane == 0) scores[p] = static_cast<Out>(__builtin_nan(""));
      continue;
    }
    if (lane < k) mean[lane] = sum0 / static_cast<double>(n);
    if (lane + 32 < k) mean[lane + 32] = sum1 / static_cast<double>(n);
    __syncwarp();
    // Entry e of the lower triangle by rows is (i, j), e = i (i + 1) / 2 + j.
    int i0 = 0;
    while ((i0 + 1) * (i0 + 2) / 2 <= lane) ++i0;
    const int j0 = lane - i0 * (i0 + 1) / 2;
    for (int e = lane, i = i0, j = j0; e < entries; e += 32) {
      c[i * k + j] = 0;
      for (j += 32; j > i && i < k; ++i) j -= i + 1;
    }
    forEachBackground(components, valid, g, row, column, [&](const double* x) {
      for (int e = lane, i = i0, j = j0; e < entries; e += 32) {
        c[i * k + j] += (x[i] - mean[i]) * (x[j] - mean[j]);
        for (j += 32; j > i && i < k; ++i) j -= i + 1;
      }
    });
    __syncwarp();
    if (lane == 0)
      scores[p] = static_cast<Out>(factorAndWhiten(c, mean, d, y, k, n, g.shrinkage, g.noise));
    __syncwarp();
  }
}

template <class Out>
__global__ void anglesKernel(const double* __restrict__ rows, const double* __restrict__ energy,
                             const unsigned char* __restrict__ valid, int64_t pixels, int bands,
                             const double* __restrict__ units, int spectra, double maxAngle,
                             unsigned short* __restrict__ classes, Out* __restrict__ bestAngle,
                             Out* __restrict__ angles) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarps;
  const Out nan = static_cast<Out>(__builtin_nan(""));
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5); p < pixels;
       p += warps) {
    const double norm = sqrt(energy[p]);
    if (!valid[p] || !(norm > 0)) {
      if (lane == 0) {
        classes[p] = 0;
        bestAngle[p] = nan;
      }
      if (angles)
        for (int s = lane; s < spectra; s += 32) angles[p * spectra + s] = nan;
      continue;
    }
    const double* row = rows + p * bands;
    double best = kInfinity;
    int bestClass = 0;
    for (int s = 0; s < spectra; ++s) {
      const double* unit = units + static_cast<int64_t>(s) * bands;
      double sum = 0;
      for (int b = lane; b < bands; b += 32) {
        const double d = row[b] / norm - unit[b];
        sum += d * d;
      }
      for (int offset = 16; offset > 0; offset /= 2)
        sum += __shfl_xor_sync(0xFFFFFFFFu, sum, offset);
      const double angle = 2 * asin(fmin(1.0, sqrt(sum) / 2));
      if (angles && lane == 0) angles[p * spectra + s] = static_cast<Out>(angle);
      if (angle < best) {
        best = angle;
        bestClass = s;
      }
    }
    if (lane == 0) {
      classes[p] = best <= maxAngle ? static_cast<unsigned short>(bestClass + 1) : 0;
      bestAngle[p] = static_cast<Out>(best);
    }
  }
}

}  // namespace

template <class Out>
void spectralAngles(const double* rows, const double* energy, const unsigned char* valid,
                    int64_t pixels, int bands, const double* units, int spectra, double maxAngle,
                    unsigned short* classes, Out* bestAngle, Out* angles, cudaStream_t stream) {
  anglesKernel<<<gridFor(pixels, kWarps), kThreads, 0, stream>>>(
      rows, energy, valid, pixels, bands, units, spectra, maxAngle, classes, bestAngle, angles);
  checkLaunch("spectralAngles");
}

void bandRanges(const double* rows, const unsigned char* valid, int64_t pixels, int bands,
                double* low, double* high, cudaStream_t stream) {
  bandRangesKernel<<<bands, kThreads, 0, stream>>>(rows, valid, pixels, bands, low, high);
  checkLaunch("bandRanges");
}

template <class T>
void unmixingRows(const T* raw, int64_t pixels, int bands, const T* nodataValue,
                  const unsigned char* hasNodata, const double* center, double* rows,
                  unsigned char* valid, double* weight, double* energy, cudaStream_t stream) {
  unmixingRowsKernel<<<gridFor(pixels, kWarps), kThreads, 0, stream>>>(
      raw, pixels, bands, nodataValue, hasNodata, center, rows, valid, weight, energy);
  checkLaunch("unmixingRows");
}

void keepRows(const double* products, const unsigned char* valid, const double* offset,
              int64_t pixels, int columns, double* kept, cudaStream_t stream) {
  keepRowsKernel<<<gridFor(pixels * columns, kThreads), kThreads, 0, stream>>>(
      products, valid, offset, pixels, columns, kept);
  checkLaunch("keepRows");
}

void keepEnergy(const double* energy, const unsigned char* valid, int64_t pixels, double* kept,
                cudaStream_t stream) {
  keepEnergyKernel<<<gridFor(pixels, kThreads), kThreads, 0, stream>>>(energy, valid, pixels, kept);
  checkLaunch("keepEnergy");
}

void deflateKept(const double* products, int64_t pixels, double* kept, cudaStream_t stream) {
  deflateKeptKernel<<<gridFor(pixels, kThreads), kThreads, 0, stream>>>(products, pixels, kept);
  checkLaunch("deflateKept");
}

int searchBlockCount(int64_t pixels) {
  return static_cast<int>((pixels + kSearchThreads - 1) / kSearchThreads);
}

int searchBlocks(const ScoreRule& rule, const double* products, const double* energy,
                 const unsigned char* valid, int64_t pixels, int64_t firstPixel, Candidate* best,
                 cudaStream_t stream) {
  const int blocks = searchBlockCount(pixels);
  searchKernel<<<blocks, kSearchThreads, 0, stream>>>(rule, products, energy, valid, pixels,
                                                      firstPixel, best);
  checkLaunch("search");
  return blocks;
}

void solveAbundances(const double* gram, int endmembers, AbundanceMethod method,
                     const double* products, int64_t pixels, unsigned char* valid, double* solved,
                     unsigned long long* unsolved, cudaStream_t stream) {
  // The solver's arrays live in registers and local memory: sized for the endmembers.
  constexpr int kThreadsPerBlock = 128;
  const unsigned blocks = gridFor(pixels, kThreadsPerBlock);
  if (endmembers <= 8)
    solveKernel<8><<<blocks, kThreadsPerBlock, 0, stream>>>(gram, endmembers, method, products,
                                                            pixels, valid, solved, unsolved);
  else if (endmembers <= 16)
    solveKernel<16><<<blocks, kThreadsPerBlock, 0, stream>>>(gram, endmembers, method, products,
                                                             pixels, valid, solved, unsolved);
  else
    solveKernel<kMaxEndmembers><<<blocks, kThreadsPerBlock, 0, stream>>>(
        gram, endmembers, method, products, pixels, valid, solved, unsolved);
  checkLaunch("solveAbundances");
}

void rowEnergy(const double* rows, int64_t pixels, int bands, double* energy, cudaStream_t stream) {
  rowEnergyKernel<<<gridFor(pixels, kWarps), kThreads, 0, stream>>>(rows, pixels, bands, energy);
  checkLaunch("rowEnergy");
}

template <class Out>
void encodeAbundances(const double* solved, const double* energy, const unsigned char* valid,
                      int64_t pixels, int endmembers, int bands, Out* abundances, Out* rmse,
                      cudaStream_t stream) {
  encodeKernel<<<gridFor(pixels * endmembers, kThreads), kThreads, 0, stream>>>(
      solved, energy, valid, pixels, endmembers, bands, abundances, rmse);
  checkLaunch("encodeAbundances");
}

#define INSTANTIATE(T)                                                                    \
  template void unmixingRows<T>(const T*, int64_t, int, const T*, const unsigned char*,   \
                                const double*, double*, unsigned char*, double*, double*, \
                                cudaStream_t);
HYPERSTREAM_FOR_EACH_SAMPLE_TYPE(INSTANTIATE)
#undef INSTANTIATE
template void encodeAbundances<float>(const double*, const double*, const unsigned char*, int64_t,
                                      int, int, float*, float*, cudaStream_t);
template void encodeAbundances<double>(const double*, const double*, const unsigned char*, int64_t,
                                       int, int, double*, double*, cudaStream_t);
template <class Out>
void localRxScores(const double* components, const unsigned char* valid, int k, int64_t width,
                   int64_t firstRow, int64_t rowCount, int64_t scoreRow, int64_t scoreRows,
                   int window, int guard, double shrinkage, double noise, Out* scores,
                   cudaStream_t stream) {
  const WindowGeometry geometry{
      k,          width,     firstRow,  rowCount, scoreRow, scoreRows * width,
      window / 2, guard / 2, shrinkage, noise};
  // Each warp's mean, covariance and whitened vector in shared memory: 48 KiB a block.
  const size_t warpBytes = static_cast<size_t>(k * k + 2 * k) * sizeof(double);
  const int warps = static_cast<int>(std::clamp<size_t>((48 << 10) / warpBytes, 1, kWarps));
  localRxKernel<<<gridFor(geometry.pixels, warps), 32 * warps, warps * warpBytes, stream>>>(
      components, valid, geometry, scores);
  checkLaunch("localRxScores");
}

template void spectralAngles<float>(const double*, const double*, const unsigned char*, int64_t,
                                    int, const double*, int, double, unsigned short*, float*,
                                    float*, cudaStream_t);
template void spectralAngles<double>(const double*, const double*, const unsigned char*, int64_t,
                                     int, const double*, int, double, unsigned short*, double*,
                                     double*, cudaStream_t);

template void localRxScores<float>(const double*, const unsigned char*, int, int64_t, int64_t,
                                   int64_t, int64_t, int64_t, int, int, double, double, float*,
                                   cudaStream_t);
template void localRxScores<double>(const double*, const unsigned char*, int, int64_t, int64_t,
                                    int64_t, int64_t, int64_t, int, int, double, double, double*,
                                    cudaStream_t);

}  // namespace hyperstream::cuda
