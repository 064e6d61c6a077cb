// The per-column detectors' kernels on a GPU. Each strip is uploaded and taken in chunks of rows.
// Pass 1: each column's shifted deviations (float64, pixel-interleaved as the strip), their sums,
// ranges and noise in a thread per column and band, and their products in one batched DGEMM over
// the columns (column c's pixels are a bands x rows matrix at c * bands with leading dimension
// width x bands). Pass 2: the deviations from each column's mean, whitened by a batched triangular
// solve against the column's factor (RX, ACE), the filters' products by a batched DGEMM (MF, ACE).
// The factors are computed on the host from the sums these kernels give back.

#include "cuda/core/GpuContext.h"
#include "cuda/core/Transpose.h"
#include "cuda/detect/ColumnDeviceKernels.h"
#include "cuda/detect/CudaColumnDetectKernels.h"

#include <algorithm>
#include <climits>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace hyperstream::cuda {

namespace {

// Columns downloaded (their sums) or uploaded (their detectors) at once.
constexpr int64_t kColumnBatch = 64;

class CudaColumnDetectKernels final : public ColumnDetectKernels {
 public:
  CudaColumnDetectKernels(int device, int64_t memoryBytes, std::string description)
      : context_(device, memoryBytes, std::move(description)) {}
  ~CudaColumnDetectKernels() override { context_.finishWork(); }

  std::string name() const override { return context_.description(); }
  HostMemory allocateHost(size_t bytes) override { return context_.allocateHost(bytes); }
  DeviceTimes deviceTimes() const override { return times_; }

  bool takesBandMajor() const override { return true; }

  void prepare(const ColumnLayout& layout) override {
    context_.select();
    layout_ = layout;
    const int64_t width = layout.width, bands = layout.bands;
    if (width * bands * std::max(1, layout.outputs) > INT_MAX)
      throw DeviceError("an image row of " + std::to_string(width * bands) +
                        " values is more than cuBLAS's batched calls take");
    planChunks();
    columnValues_ = DeviceArray<double>(static_cast<size_t>(width * bands) * 6);
    check(cudaMemset(columnValues_.get(), 0, columnValues_.size() * sizeof(double)), "cudaMemset");
    columnCounts_ = DeviceArray<long long>(static_cast<size_t>(width) * 3);
    std::vector<long long> counts(columnCounts_.size(), 0);
    std::fill(counts.begin() + 2 * width, counts.end(), -2);  // no pixel above yet
    check(cudaMemcpy(columnCounts_.get(), counts.data(), counts.size() * sizeof(long long),
                     cudaMemcpyHostToDevice),
          "upload");
    squares_ = DeviceArray<double>(static_cast<size_t>(width * bands * bands));
    check(cudaMemset(squares_.get(), 0, squares_.size() * sizeof(double)), "cudaMemset");
    withSampleType(layout.type, [&](auto sample) { uploadNodata<decltype(sample)>(); });
  }

  void addStrip(int64_t row0, int64_t rows, const void* strip) override {
    context_.select();
    const int64_t width = layout_.width;
    const int bands = layout_.bands;
    forEachChunk(rows, strip, [&](int64_t first, int64_t count, const void* raw) {
      context_.timed(times_.moments, context_.computeStream(), [&] {
        withSampleType(layout_.type, [&](auto sample) {
          using T = decltype(sample);
          const auto* x = static_cast<const T*>(raw);
          markValid(x, count);
          startColumns(x, valid_.get(), count, width, bands, state(), context_.computeStream());
          addDeviations(x, valid_.get(), count, width, bands, row0 + first, state(),
                        deviations_.get(), context_.computeStream());
        });
        countColumns(valid_.get(), count, width, row0 + first, state(), context_.computeStream());
        addSquares(count);
      });
    });
    context_.synchronize();
  }

  void takeSums(int64_t column, ColumnSums& sums) override {
    if (column < takenFirst_ || column >= takenFirst_ + kColumnBatch) downloadSums(column);
    const int bands = layout_.bands;
    const int64_t at = column - takenFirst_;
    sums.count = taken_.counts[at];
    sums.pairs = taken_.counts[kColumnBatch + at];
    sums.aboveRow = taken_.counts[2 * kColumnBatch + at];
    std::vector<double>* parts[] = {&sums.shift, &sums.s1,    &sums.low,
                                    &sums.high,  &sums.noise, &sums.above};
    for (int k = 0; k < 6; ++k) {
      const double* values = taken_.values.data() + (k * kColumnBatch + at) * bands;
      parts[k]->assign(values, values + bands);
    }
    const int64_t packedSize = static_cast<int64_t>(bands) * (bands + 1) / 2;
    const double* packed = transferBuffer() + at * packedSize;
    sums.s2.assign(packed, packed + packedSize);
  }

  void setDetectors(std::vector<ColumnDetector> detectors) override {
    context_.select();
    taken_ = {};
    columnValues_ = DeviceArray<double>();
    columnCounts_ = DeviceArray<long long>();
    const int64_t width = layout_.width;
    const int bands = layout_.bands;
    const int filters = layout_.method == DetectMethod::Rx ? 0 : layout_.outputs;
    mean_ = DeviceArray<double>(static_cast<size_t>(width * bands));
    filters_ = DeviceArray<double>(static_cast<size_t>(width * bands * std::max(1, filters)));
    scored_ = DeviceArray<unsigned char>(static_cast<size_t>(width));
    // The factors take the products' place.
    for (int64_t first = 0; first < width; first += kColumnBatch)
      uploadDetectors(detectors, first, std::min(width, first + kColumnBatch), filters);
    if (whitens()) makeSolvePointers();
    context_.synchronize();
  }

  void score(int64_t rows, const void* strip, void* scores) override {
    context_.select();
    const int64_t width = layout_.width;
    const int bands = layout_.bands, outputs = layout_.outputs;
    const int scoreSize = layout_.outputType == OutputType::Float64 ? 8 : 4;
    forEachChunk(rows, strip, [&](int64_t first, int64_t count, const void* raw) {
      const int64_t pixels = count * width;
      context_.timed(times_.projection, context_.computeStream(), [&] {
        withSampleType(layout_.type, [&](auto sample) {
          using T = decltype(sample);
          const auto* x = static_cast<const T*>(raw);
          markValid(x, count);
          centre(x, valid_.get(), scored_.get(), mean_.get(), count, width, bands,
                 deviations_.get(), context_.computeStream());
        });
        if (whitens()) {
          whiten(count);
          squaredLengths(deviations_.get(), pixels, bands, lengths_.get(),
                         context_.computeStream());
        }
        if (layout_.method != DetectMethod::Rx) applyFilters(count);
        if (scoreSize == 8)
          finishScores(layout_.method, products_.get(), lengths_.get(), valid_.get(), scored_.get(),
                       pixels, width, outputs, reinterpret_cast<double*>(encoded_.get()),
                       context_.computeStream());
        else
          finishScores(layout_.method, products_.get(), lengths_.get(), valid_.get(), scored_.get(),
                       pixels, width, outputs, reinterpret_cast<float*>(encoded_.get()),
                       context_.computeStream());
      });
      const size_t bytes = static_cast<size_t>(pixels) * outputs * scoreSize;
      context_.timed(times_.download, context_.computeStream(), [&] {
        downloadAsync(static_cast<unsigned char*>(scores) + first * width * outputs * scoreSize,
                      encoded_.get(), bytes, context_.computeStream());
      });
      times_.downloadBytes += static_cast<int64_t>(bytes);
    });
    context_.synchronize();
  }

 private:
  bool whitens() const { return layout_.method != DetectMethod::MatchedFilter; }
  ColumnState state() const {
    const size_t n = static_cast<size_t>(layout_.width * layout_.bands);
    double* v = columnValues_.get();
    long long* counts = columnCounts_.get();
    return {v,
            v + n,
            v + 2 * n,
            v + 3 * n,
            v + 4 * n,
            v + 5 * n,
            counts,
            counts + layout_.width,
            counts + 2 * layout_.width};
  }

  // Rows a chunk holds: the strip's, or what the device memory left beside the columns' state
  // and detectors takes.
  void planChunks() {
    const int64_t width = layout_.width, bands = layout_.bands;
    const int64_t outputs = layout_.outputs;
    const int64_t sampleBytes = sampleSize(layout_.type);
    const int64_t columnsBytes =
        width * (bands * bands + 7 * bands + outputs * bands) * 8 + width * 25;
    const int64_t stagingSampleBytes = layout_.bandMajor ? sampleBytes : 0;
    const int64_t rowBytes =
        width * (bands * (sampleBytes + stagingSampleBytes + 8) + 1 + 8 + outputs * 16);
    const int64_t left = context_.budgetBytes() - columnsBytes;
    chunkRows_ = std::min<int64_t>(layout_.maxStripRows, left / rowBytes);
    if (chunkRows_ < 1)
      throw DeviceError("the statistics of " + std::to_string(width) + " columns of " +
                        std::to_string(bands) + " bands take " +
                        std::to_string(columnsBytes / kMiB) + " MiB of the GPU's " +
                        std::to_string(context_.budgetBytes() / kMiB) + " MiB");
    const auto pixels = static_cast<size_t>(chunkRows_ * width);
    raw_ = DeviceArray<unsigned char>(pixels * bands * sampleBytes);
    staging_ = DeviceArray<unsigned char>(pixels * bands * stagingSampleBytes);
    valid_ = DeviceArray<unsigned char>(pixels);
    deviations_ = DeviceArray<double>(pixels * bands);
    products_ = DeviceArray<double>(pixels * outputs);
    lengths_ = DeviceArray<double>(pixels);
    encoded_ = DeviceArray<unsigned char>(pixels * outputs * 8);
  }

  template <class T>
  void uploadNodata() {
    const ValidPixel<T> isValid(layout_.nodata.data(), layout_.bands);
    nodata_ = DeviceArray<unsigned char>(layout_.bands * sizeof(T));
    hasNodata_ = DeviceArray<unsigned char>(layout_.bands);
    check(cudaMemcpy(nodata_.get(), isValid.nodataValues().data(), nodata_.size(),
                     cudaMemcpyHostToDevice),
          "upload");
    check(cudaMemcpy(hasNodata_.get(), isValid.hasNodata().data(), hasNodata_.size(),
                     cudaMemcpyHostToDevice),
          "upload");
  }

  // work(first row, rows, the chunk on the device) for each chunk of the strip, once uploaded.
  template <class F>
  void forEachChunk(int64_t rows, const void* strip, F&& work) {
    const int64_t rowBytes = layout_.width * layout_.bands * sampleSize(layout_.type);
    for (int64_t first = 0; first < rows; first += chunkRows_) {
      const int64_t count = std::min(chunkRows_, rows - first);
      const auto bytes = static_cast<size_t>(count * rowBytes);
      context_.timed(times_.upload, context_.computeStream(), [&] {
        uploadChunk(static_cast<const unsigned char*>(strip), rows, first, count);
      });
      times_.uploadBytes += static_cast<int64_t>(bytes);
      work(first, count, raw_.get());
    }
  }

  // Rows [first, first + count) of a strip of `rows` rows into raw_, pixel-interleaved: a
  // band-major strip's rows of each band gathered into the staging array, then transposed.
  void uploadChunk(const unsigned char* strip, int64_t rows, int64_t first, int64_t count) {
    const cudaStream_t stream = context_.computeStream();
    const int64_t width = layout_.width, sampleBytes = sampleSize(layout_.type);
    if (!layout_.bandMajor) {
      const int64_t rowBytes = width * layout_.bands * sampleBytes;
      check(cudaMemcpyAsync(raw_.get(), strip + first * rowBytes,
                            static_cast<size_t>(count * rowBytes), cudaMemcpyHostToDevice, stream),
            "upload");
      return;
    }
    uploadBandMajor(strip + first * width * sampleBytes, count * width, layout_.bands,
                    static_cast<int>(sampleBytes), rows * width, staging_.get(), raw_.get(),
                    stream);
  }

  template <class T>
  void markValid(const T* raw, int64_t rows) {
    pixelValidity(raw, rows * layout_.width, layout_.bands,
                  reinterpret_cast<const T*>(nodata_.get()), hasNodata_.get(), valid_.get(),
                  context_.computeStream());
  }

  // Each column's products += D_c D_cᵀ, D_c its deviations (bands x rows).
  void addSquares(int64_t rows) {
    const int bands = layout_.bands;
    const auto rowValues = static_cast<int>(layout_.width * bands);
    const double one = 1.0;
    check(cublasDgemmStridedBatched(context_.blas(), CUBLAS_OP_N, CUBLAS_OP_T, bands, bands,
                                    static_cast<int>(rows), &one, deviations_.get(), rowValues,
                                    bands, deviations_.get(), rowValues, bands, &one,
                                    squares_.get(), bands, static_cast<long long>(bands) * bands,
                                    static_cast<int>(layout_.width)),
          "cublasDgemmStridedBatched");
  }

  // The sums of columns [column, column + kColumnBatch), as far as there are columns.
  void downloadSums(int64_t column) {
    context_.select();
    const int64_t width = layout_.width, bands = layout_.bands;
    const int64_t count = std::min(kColumnBatch, width - column);
    taken_.counts.assign(3 * kColumnBatch, 0);
    taken_.values.resize(static_cast<size_t>(6 * kColumnBatch * bands));
    const ColumnState device = state();
    const long long* counts[] = {device.count, device.pairs, device.aboveRow};
    for (int k = 0; k < 3; ++k)
      downloadAsync(taken_.counts.data() + k * kColumnBatch, counts[k] + column,
                    static_cast<size_t>(count), context_.computeStream());
    const double* values[] = {device.shift, device.s1,    device.low,
                              device.high,  device.noise, device.above};
    for (int k = 0; k < 6; ++k)
      downloadAsync(taken_.values.data() + k * kColumnBatch * bands, values[k] + column * bands,
                    static_cast<size_t>(count * bands), context_.computeStream());
    const int64_t packedSize = bands * (bands + 1) / 2;
    grow(packed_, static_cast<size_t>(kColumnBatch * packedSize));
    packUpper(squares_.get() + column * bands * bands, count, static_cast<int>(bands),
              packed_.get(), context_.computeStream());
    downloadAsync(transferBuffer(), packed_.get(), static_cast<size_t>(count * packedSize),
                  context_.computeStream());
    context_.synchronize();
    takenFirst_ = column;
  }

  // Columns [first, last)'s means, factors (packed, unpacked on the device: the identity where
  // there is none) and filters (bands x filters, column-major), uploaded.
  void uploadDetectors(const std::vector<ColumnDetector>& detectors, int64_t first, int64_t last,
                       int filters) {
    const int64_t bands = layout_.bands, count = last - first;
    const int64_t packedSize = bands * (bands + 1) / 2;
    std::vector<double> mean(static_cast<size_t>(count * bands), 0.0);
    double* factor = transferBuffer();
    std::fill(factor, factor + count * packedSize, 0.0);
    std::vector<double> filter(static_cast<size_t>(count * bands * std::max(1, filters)), 0.0);
    std::vector<unsigned char> scored(static_cast<size_t>(count), 0);
    for (int64_t c = first; c < last; ++c) {
      const ColumnDetector& detector = detectors[c];
      const int64_t at = c - first;
      scored[at] = detector.scored ? 1 : 0;
      double* packed = factor + at * packedSize;
      if (detector.factor.empty()) {
        for (int64_t i = 0; i < bands; ++i) packed[i * (i + 1) / 2 + i] = 1.0;
      } else {
        std::copy(detector.factor.begin(), detector.factor.end(), packed);
      }
      if (!detector.scored) continue;
      std::copy(detector.mean.begin(), detector.mean.end(), mean.begin() + at * bands);
      for (int t = 0; t < filters; ++t)
        std::copy(detector.filters[t].begin(), detector.filters[t].end(),
                  filter.begin() + (at * filters + t) * bands);
    }
    const cudaStream_t stream = context_.computeStream();
    uploadAsync(mean_.get() + first * bands, mean.data(), mean.size(), stream);
    grow(packed_, static_cast<size_t>(count * packedSize));
    uploadAsync(packed_.get(), factor, static_cast<size_t>(count * packedSize), stream);
    unpackFactors(packed_.get(), count, static_cast<int>(bands),
                  squares_.get() + first * bands * bands, stream);
    if (filters > 0)
      uploadAsync(filters_.get() + first * bands * filters, filter.data(), filter.size(), stream);
    uploadAsync(scored_.get() + first, scored.data(), scored.size(), stream);
    context_.synchronize();  // before the host vectors go
  }

  // The batched solve's matrices: column c's factor and its deviations in the chunk.
  void makeSolvePointers() {
    const int64_t width = layout_.width, bands = layout_.bands;
    std::vector<double*> factors(static_cast<size_t>(width)), pixels(factors.size());
    for (int64_t c = 0; c < width; ++c) {
      factors[c] = squares_.get() + c * bands * bands;
      pixels[c] = deviations_.get() + c * bands;
    }
    factorPointers_ = DeviceArray<double*>(factors.size());
    pixelPointers_ = DeviceArray<double*>(pixels.size());
    uploadAsync(factorPointers_.get(), factors.data(), factors.size(), context_.computeStream());
    uploadAsync(pixelPointers_.get(), pixels.data(), pixels.size(), context_.computeStream());
  }

  // Each column's deviations whitened in place: y = L⁻¹ d. The factor, row-major lower, is Lᵀ in
  // cuBLAS's column-major terms: solve (Lᵀ)ᵀ y = d.
  void whiten(int64_t rows) {
    const int bands = layout_.bands;
    const double one = 1.0;
    check(cublasDtrsmBatched(context_.blas(), CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T,
                             CUBLAS_DIAG_NON_UNIT, bands, static_cast<int>(rows), &one,
                             factorPointers_.get(), bands, pixelPointers_.get(),
                             static_cast<int>(layout_.width * bands),
                             static_cast<int>(layout_.width)),
          "cublasDtrsmBatched");
  }

  // products (pixels x outputs) = each column's filtersᵀ times its (whitened) deviations.
  void applyFilters(int64_t rows) {
    const int bands = layout_.bands, outputs = layout_.outputs;
    const double one = 1.0, zero = 0.0;
    check(cublasDgemmStridedBatched(context_.blas(), CUBLAS_OP_T, CUBLAS_OP_N, outputs,
                                    static_cast<int>(rows), bands, &one, filters_.get(), bands,
                                    static_cast<long long>(bands) * outputs, deviations_.get(),
                                    static_cast<int>(layout_.width * bands), bands, &zero,
                                    products_.get(), static_cast<int>(layout_.width * outputs),
                                    outputs, static_cast<int>(layout_.width)),
          "cublasDgemmStridedBatched");
  }

  GpuContext context_;
  DeviceTimes& times_ = context_.times();
  ColumnLayout layout_;
  int64_t chunkRows_ = 0;
  // Pass 1's state (ColumnState: six values per column and band, three counts per column) and
  // each column's products; in pass 2 the products' place holds the factors.
  DeviceArray<double> columnValues_, squares_;
  DeviceArray<long long> columnCounts_;
  DeviceArray<double> mean_, filters_, deviations_, products_, lengths_, packed_;
  DeviceArray<unsigned char> raw_, staging_, valid_, encoded_, nodata_, hasNodata_, scored_;
  DeviceArray<double*> factorPointers_, pixelPointers_;
  // The sums of kColumnBatch columns from takenFirst_ on, downloaded for takeSums (their packed
  // products in the transfer buffer).
  struct Taken {
    std::vector<long long> counts;
    std::vector<double> values;
  } taken_;
  int64_t takenFirst_ = std::numeric_limits<int64_t>::min() / 2;
  // Page-locked room for kColumnBatch columns' packed products (down) or factors (up): 362 MB
  // each way for 2300 columns of 198 bands, which pageable memory took at a fraction of the bus's
  // rate.
  HostMemory transfer_{nullptr, [](unsigned char*) {}};

  double* transferBuffer() {
    if (!transfer_) {
      const int64_t bands = layout_.bands;
      transfer_ = context_.allocateHost(
          static_cast<size_t>(kColumnBatch * bands * (bands + 1) / 2) * sizeof(double));
    }
    return reinterpret_cast<double*>(transfer_.get());
  }
};

}  // namespace

std::unique_ptr<ColumnDetectKernels> makeCudaColumnDetectKernels(int device, int64_t memoryBytes,
                                                                 std::string description) {
  return std::make_unique<CudaColumnDetectKernels>(device, memoryBytes, std::move(description));
}

}  // namespace hyperstream::cuda
