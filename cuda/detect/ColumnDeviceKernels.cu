#include "cuda/core/Launch.h"
#include "cuda/core/PixelValidity.h"
#include "cuda/detect/ColumnDeviceKernels.h"

#include <cmath>

namespace hyperstream::cuda {

namespace {

// A warp per pixel: the bands' validity.
template <class T>
__global__ void pixelValidityKernel(const T* __restrict__ raw, int64_t pixels, int bands,
                                    const T* __restrict__ nodataValue,
                                    const unsigned char* __restrict__ hasNodata,
                                    unsigned char* __restrict__ valid) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarps;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5); p < pixels;
       p += warps) {
    const bool ok = validPixel(raw + p * bands, bands, lane, nodataValue, hasNodata);
    if (lane == 0) valid[p] = ok ? 1 : 0;
  }
}

// A thread per column.
template <class T>
__global__ void startColumnsKernel(const T* __restrict__ raw,
                                   const unsigned char* __restrict__ valid, int64_t rows,
                                   int64_t width, int bands, ColumnState state) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= width || state.count[c] > 0) return;
  for (int64_t r = 0; r < rows; ++r) {
    if (!valid[r * width + c]) continue;
    const T* x = raw + (r * width + c) * bands;
    for (int b = 0; b < bands; ++b) {
      const auto v = static_cast<double>(x[b]);
      const int64_t i = c * bands + b;
      state.shift[i] = state.low[i] = state.high[i] = state.above[i] = v;
    }
    return;
  }
}

// A thread per column and band (consecutive threads read consecutive samples of a row), over the
// chunk's rows in order.
template <class T>
__global__ void addDeviationsKernel(const T* __restrict__ raw,
                                    const unsigned char* __restrict__ valid, int64_t rows,
                                    int64_t width, int bands, int64_t row0, ColumnState state,
                                    double* __restrict__ deviations) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t rowValues = width * bands;
  if (i >= rowValues) return;
  const int64_t c = i / bands;
  const double shift = state.shift[i];
  double s1 = state.s1[i], low = state.low[i], high = state.high[i], noise = state.noise[i];
  double above = state.above[i];
  long long aboveRow = state.aboveRow[c];
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t at = r * rowValues + i;
    if (!valid[r * width + c]) {
      deviations[at] = 0;
      continue;
    }
    const auto v = static_cast<double>(raw[at]);
    const double d = v - shift;
    deviations[at] = d;
    s1 += d;
    low = fmin(low, v);
    high = fmax(high, v);
    if (aboveRow == row0 + r - 1) {
      const double difference = v - above;
      noise += difference * difference;
    }
    above = v;
    aboveRow = row0 + r;
  }
  state.s1[i] = s1;
  state.low[i] = low;
  state.high[i] = high;
  state.noise[i] = noise;
  state.above[i] = above;
}

// A thread per column.
__global__ void countColumnsKernel(const unsigned char* __restrict__ valid, int64_t rows,
                                   int64_t width, int64_t row0, ColumnState state) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= width) return;
  long long count = state.count[c], pairs = state.pairs[c], aboveRow = state.aboveRow[c];
  for (int64_t r = 0; r < rows; ++r) {
    if (!valid[r * width + c]) continue;
    ++count;
    if (aboveRow == row0 + r - 1) ++pairs;
    aboveRow = row0 + r;
  }
  state.count[c] = count;
  state.pairs[c] = pairs;
  state.aboveRow[c] = aboveRow;
}

__global__ void packUpperKernel(const double* __restrict__ squares, int64_t columns, int bands,
                                double* __restrict__ packed) {
  const int64_t square = static_cast<int64_t>(bands) * bands;
  const int64_t packedSize = static_cast<int64_t>(bands) * (bands + 1) / 2;
  const int64_t values = columns * square;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t at = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; at < values;
       at += step) {
    const int64_t c = at / square, i = at % square / bands, j = at % bands;
    if (j >= i) packed[c * packedSize + i * bands - i * (i - 1) / 2 + (j - i)] = squares[at];
  }
}

__global__ void unpackFactorsKernel(const double* __restrict__ packed, int64_t columns, int bands,
                                    double* __restrict__ full) {
  const int64_t square = static_cast<int64_t>(bands) * bands;
  const int64_t packedSize = static_cast<int64_t>(bands) * (bands + 1) / 2;
  const int64_t values = columns * square;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t at = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; at < values;
       at += step) {
    const int64_t c = at / square, i = at % square / bands, j = at % bands;
    full[at] = j <= i ? packed[c * packedSize + i * (i + 1) / 2 + j] : 0.0;
  }
}

template <class T>
__global__ void centreKernel(const T* __restrict__ raw, const unsigned char* __restrict__ valid,
                             const unsigned char* __restrict__ scored,
                             const double* __restrict__ mean, int64_t rows, int64_t width,
                             int bands, double* __restrict__ deviations) {
  const int64_t rowValues = width * bands;
  const int64_t values = rows * rowValues;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t at = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; at < values;
       at += step) {
    const int64_t i = at % rowValues, c = i / bands;
    const bool used = valid[at / bands] && scored[c];
    deviations[at] = used ? static_cast<double>(raw[at]) - mean[i] : 0.0;
  }
}

// A warp per pixel.
__global__ void squaredLengthsKernel(const double* __restrict__ whitened, int64_t pixels, int bands,
                                     double* __restrict__ lengths) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarps;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5); p < pixels;
       p += warps) {
    double sum = 0;
    for (int b = lane; b < bands; b += 32) {
      const double y = whitened[p * bands + b];
      sum += y * y;
    }
    for (int offset = 16; offset > 0; offset /= 2)
      sum += __shfl_down_sync(0xFFFFFFFFu, sum, offset);
    if (lane == 0) lengths[p] = sum;
  }
}

template <class Out>
__global__ void finishScoresKernel(DetectMethod method, const double* __restrict__ products,
                                   const double* __restrict__ lengths,
                                   const unsigned char* __restrict__ valid,
                                   const unsigned char* __restrict__ scored, int64_t pixels,
                                   int64_t width, int outputs, Out* __restrict__ scores) {
  const int64_t values = pixels * outputs;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t at = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; at < values;
       at += step) {
    const int64_t p = at / outputs;
    double score = __longlong_as_double(0x7ff8000000000000ll);  // NaN
    if (valid[p] && scored[p % width]) {
      if (method == DetectMethod::Rx) {
        score = lengths[p];
      } else if (method == DetectMethod::MatchedFilter) {
        score = products[at];
      } else {
        const double length = lengths[p];
        score = length > 0 ? products[at] * products[at] / length : 0.0;
      }
    }
    scores[at] = static_cast<Out>(score);
  }
}

unsigned columnGrid(int64_t items) {
  return static_cast<unsigned>((items + kThreads - 1) / kThreads);
}

}  // namespace

template <class T>
void pixelValidity(const T* raw, int64_t pixels, int bands, const T* nodataValue,
                   const unsigned char* hasNodata, unsigned char* valid, cudaStream_t stream) {
  pixelValidityKernel<<<gridFor(pixels, kWarps), kThreads, 0, stream>>>(
      raw, pixels, bands, nodataValue, hasNodata, valid);
  checkLaunch("pixelValidity");
}

template <class T>
void startColumns(const T* raw, const unsigned char* valid, int64_t rows, int64_t width, int bands,
                  ColumnState state, cudaStream_t stream) {
  startColumnsKernel<<<columnGrid(width), kThreads, 0, stream>>>(raw, valid, rows, width, bands,
                                                                 state);
  checkLaunch("startColumns");
}

template <class T>
void addDeviations(const T* raw, const unsigned char* valid, int64_t rows, int64_t width, int bands,
                   int64_t row0, ColumnState state, double* deviations, cudaStream_t stream) {
  addDeviationsKernel<<<columnGrid(width * bands), kThreads, 0, stream>>>(
      raw, valid, rows, width, bands, row0, state, deviations);
  checkLaunch("addDeviations");
}

void countColumns(const unsigned char* valid, int64_t rows, int64_t width, int64_t row0,
                  ColumnState state, cudaStream_t stream) {
  countColumnsKernel<<<columnGrid(width), kThreads, 0, stream>>>(valid, rows, width, row0, state);
  checkLaunch("countColumns");
}

void packUpper(const double* squares, int64_t columns, int bands, double* packed,
               cudaStream_t stream) {
  packUpperKernel<<<gridFor(columns * bands * bands, kThreads), kThreads, 0, stream>>>(
      squares, columns, bands, packed);
  checkLaunch("packUpper");
}

void unpackFactors(const double* packed, int64_t columns, int bands, double* full,
                   cudaStream_t stream) {
  unpackFactorsKernel<<<gridFor(columns * bands * bands, kThreads), kThreads, 0, stream>>>(
      packed, columns, bands, full);
  checkLaunch("unpackFactors");
}

template <class T>
void centre(const T* raw, const unsigned char* valid, const unsigned char* scored,
            const double* mean, int64_t rows, int64_t width, int bands, double* deviations,
            cudaStream_t stream) {
  centreKernel<<<gridFor(rows * width * bands, kThreads), kThreads, 0, stream>>>(
      raw, valid, scored, mean, rows, width, bands, deviations);
  checkLaunch("centre");
}

void squaredLengths(const double* whitened, int64_t pixels, int bands, double* lengths,
                    cudaStream_t stream) {
  squaredLengthsKernel<<<gridFor(pixels, kWarps), kThreads, 0, stream>>>(whitened, pixels, bands,
                                                                         lengths);
  checkLaunch("squaredLengths");
}

template <class Out>
void finishScores(DetectMethod method, const double* products, const double* lengths,
                  const unsigned char* valid, const unsigned char* scored, int64_t pixels,
                  int64_t width, int outputs, Out* scores, cudaStream_t stream) {
  finishScoresKernel<<<gridFor(pixels * outputs, kThreads), kThreads, 0, stream>>>(
      method, products, lengths, valid, scored, pixels, width, outputs, scores);
  checkLaunch("finishScores");
}

// clang-format off
#define INSTANTIATE(T) \
  template void pixelValidity<T>(const T*, int64_t, int, const T*, const unsigned char*, \
                                 unsigned char*, cudaStream_t); \
  template void startColumns<T>(const T*, const unsigned char*, int64_t, int64_t, int, \
                                ColumnState, cudaStream_t); \
  template void addDeviations<T>(const T*, const unsigned char*, int64_t, int64_t, int, int64_t, \
                                 ColumnState, double*, cudaStream_t); \
  template void centre<T>(const T*, const unsigned char*, const unsigned char*, const double*, \
                          int64_t, int64_t, int, double*, cudaStream_t);
HYPERSTREAM_FOR_EACH_SAMPLE_TYPE(INSTANTIATE)
#undef INSTANTIATE
// clang-format on
template void finishScores<float>(DetectMethod, const double*, const double*, const unsigned char*,
                                  const unsigned char*, int64_t, int64_t, int, float*,
                                  cudaStream_t);
template void finishScores<double>(DetectMethod, const double*, const double*, const unsigned char*,
                                   const unsigned char*, int64_t, int64_t, int, double*,
                                   cudaStream_t);

}  // namespace hyperstream::cuda
