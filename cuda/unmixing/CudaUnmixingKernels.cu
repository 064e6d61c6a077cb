// The unmixing kernels on a GPU: each strip is uploaded and taken in chunks of float64 rows; their
// products with the search's weights or the endmembers are cuBLAS DGEMMs, the moments a DGEMV and
// a DSYRK per chunk (about the chunk's own mean, merged on the host as the CPU's are), the scores
// and the active-set solves kernels of their own.

#include "core/GpuContext.h"
#include "core/Samples.h"
#include "unmixing/CudaUnmixingKernels.h"
#include "unmixing/UnmixingDeviceKernels.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>

namespace hyperstream::cuda {

namespace {

constexpr int64_t kChunkPixels = 1 << 16;

class CudaUnmixingKernels final : public UnmixingKernels {
 public:
  CudaUnmixingKernels(int device, int64_t memoryBytes, std::string description)
      : context_(device, memoryBytes, std::move(description)) {}
  ~CudaUnmixingKernels() override { context_.finishWork(); }

  std::string name() const override { return context_.description(); }
  HostMemory allocateHost(size_t bytes) override { return context_.allocateHost(bytes); }
  DeviceTimes deviceTimes() const override { return times_; }

  void prepare(int bands, SampleType /*type*/, int64_t /*maxStripPixels*/) override {
    context_.select();
    total_ = Moments(bands);
    grow(ones_, kChunkPixels);
    const std::vector<double> ones(kChunkPixels, 1.0);
    check(
        cudaMemcpy(ones_.get(), ones.data(), kChunkPixels * sizeof(double), cudaMemcpyHostToDevice),
        "upload");
  }

  void accumulateMoments(const StripView& strip) override {
    forEachChunk(strip, nullptr, [&](int64_t, int64_t count) { addChunkMoments(strip, count); });
  }

  Moments takeMoments(int bands) override {
    Moments taken = total_;
    total_ = Moments(bands);
    return taken;
  }

  SearchFound search(const StripView& strip, const PixelSearch& search) override {
    const int slots = search.scoreCount();
    uploadSearch(search);
    SearchFound result;
    std::vector<Candidate>& best = result.best;
    best.resize(slots);
    forEachChunk(strip, search.center.data(), [&](int64_t first, int64_t count) {
      result.validPixels += validCount(count);
      const int blocks = searchBlockCount(count);
      grow(candidates_, static_cast<size_t>(blocks) * slots);
      context_.timed(times_.search, context_.computeStream(), [&] {
        multiplyWeights(search, count);
        searchBlocks(deviceSearch_, products_.get(), energy_.get(), valid_.get(), count,
                     strip.firstPixel + first, candidates_.get(), context_.computeStream());
      });
      std::vector<Candidate> found(static_cast<size_t>(blocks) * slots);
      downloadAsync(found.data(), candidates_.get(), found.size(), context_.computeStream());
      context_.synchronize();
      for (int s = 0; s < slots; ++s)
        for (int b = 0; b < blocks; ++b)
          if (found[static_cast<size_t>(s) * blocks + b].beats(best[s]))
            best[s] = found[static_cast<size_t>(s) * blocks + b];
    });
    return result;
  }

  UnmixStats unmix(const StripView& strip, const Unmixing& unmixing, void* abundances,
                   void* rmse) override {
    uploadModel(unmixing);
    UnmixStats stats;
    const int size = unmixing.type == OutputType::Float64 ? 8 : 4;
    forEachChunk(strip, nullptr, [&](int64_t first, int64_t count) {
      stats.validPixels += validCount(count);
      grow(solved_, static_cast<size_t>(count) * unmixing.endmembers);
      grow(encoded_, static_cast<size_t>(count) * (unmixing.endmembers + 1) * size);
      check(
          cudaMemsetAsync(unsolved_.get(), 0, sizeof(unsigned long long), context_.computeStream()),
          "cudaMemset");
      context_.timed(times_.unmix, context_.computeStream(), [&] { solveChunk(unmixing, count); });
      downloadChunk(unmixing, count, size,
                    static_cast<unsigned char*>(abundances) + first * unmixing.endmembers * size,
                    rmse ? static_cast<unsigned char*>(rmse) + first * size : nullptr);
      unsigned long long unsolved = 0;
      downloadAsync(&unsolved, unsolved_.get(), 1, context_.computeStream());
      context_.synchronize();
      stats.unsolved += static_cast<int64_t>(unsolved);
    });
    return stats;
  }

 private:
  // Uploads the strip and makes its float64 rows chunk by chunk (centred on `center` when not
  // null): rows_, valid_, weight_, energy_; calls work(first pixel of the chunk, pixels in it).
  template <class Work>
  void forEachChunk(const StripView& strip, const double* center, const Work& work) {
    context_.select();
    const int bands = strip.bands;
    if (center) {
      grow(center_, bands);
      uploadAsync(center_.get(), center, bands, context_.computeStream());
    }
    withSampleType(strip.type, [&](auto sample) {
      using T = decltype(sample);
      const T* raw = uploadStrip<T>(strip);
      grow(rows_, static_cast<size_t>(kChunkPixels) * bands);
      grow(valid_, kChunkPixels);
      grow(weight_, kChunkPixels);
      grow(energy_, kChunkPixels);
      for (int64_t first = 0; first < strip.pixels; first += kChunkPixels) {
        const int64_t count = std::min(kChunkPixels, strip.pixels - first);
        unmixingRows(raw + first * bands, count, bands, reinterpret_cast<const T*>(nodata_.get()),
                     hasNodata_.get(), center ? center_.get() : nullptr, rows_.get(), valid_.get(),
                     weight_.get(), energy_.get(), context_.computeStream());
        chunkFirst_ = first;
        work(first, count);
      }
    });
  }

  template <class T>
  const T* uploadStrip(const StripView& strip) {
    if (strip.bandMajor) throw DeviceError("unmixing kernels take pixel-interleaved strips");
    const int bands = strip.bands;
    const size_t bytes = static_cast<size_t>(strip.pixels) * bands * sizeof(T);
    grow(raw_, bytes);
    grow(nodata_, bands * sizeof(T));
    grow(hasNodata_, bands);
    const ValidPixel<T> isValid(strip.nodata, bands);  // the CPU's rule, uploaded
    uploadAsync(reinterpret_cast<T*>(nodata_.get()), isValid.nodataValues().data(), bands,
                context_.computeStream());
    uploadAsync(hasNodata_.get(), isValid.hasNodata().data(), bands, context_.computeStream());
    context_.timed(times_.upload, context_.computeStream(), [&] {
      check(cudaMemcpyAsync(raw_.get(), strip.data, bytes, cudaMemcpyHostToDevice,
                            context_.computeStream()),
            "upload");
    });
    times_.uploadBytes += static_cast<int64_t>(bytes);
    return reinterpret_cast<const T*>(raw_.get());
  }

  int64_t validCount(int64_t count) {
    double total = 0;
    check(cublasDasum(context_.blas(), static_cast<int>(count), weight_.get(), 1, &total),
          "cublasDasum");
    return static_cast<int64_t>(total);
  }

  // The chunk's moments about its own mean: the sums by DGEMV, then the rows centred again and
  // their Gram matrix by DSYRK; merged into total_ on the host.
  void addChunkMoments(const StripView& strip, int64_t count) {
    const int bands = strip.bands;
    Moments chunk(bands);
    context_.timed(times_.moments, context_.computeStream(),
                   [&] { chunk.count = validCount(count); });
    if (chunk.count == 0) return;
    grow(sums_, bands);
    grow(comoment_, static_cast<size_t>(bands) * bands);
    const double one = 1.0, zero = 0.0;
    check(cublasDgemv(context_.blas(), CUBLAS_OP_N, bands, static_cast<int>(count), &one,
                      rows_.get(), bands, ones_.get(), 1, &zero, sums_.get(), 1),
          "cublasDgemv");
    downloadAsync(chunk.mean.data(), sums_.get(), bands, context_.computeStream());
    context_.synchronize();
    for (double& m : chunk.mean) m /= static_cast<double>(chunk.count);
    context_.timed(times_.moments, context_.computeStream(), [&] {
      grow(center_, bands);
      uploadAsync(center_.get(), chunk.mean.data(), bands, context_.computeStream());
      recentre(strip, count);
      check(cublasDsyrk(context_.blas(), CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, bands,
                        static_cast<int>(count), &one, rows_.get(), bands, &zero, comoment_.get(),
                        bands),
            "cublasDsyrk");
    });
    downloadAsync(chunk.comoment.data(), comoment_.get(), chunk.comoment.size(),
                  context_.computeStream());
    context_.synchronize();
    // The upper triangle in column-major order is the lower one in row-major: mirror it.
    for (int i = 0; i < bands; ++i)
      for (int j = 0; j < i; ++j)
        chunk.comoment[static_cast<size_t>(j) * bands + i] =
            chunk.comoment[static_cast<size_t>(i) * bands + j];
    total_.merge(chunk);
  }

  // The current chunk's rows made again from the strip, centred on center_.
  void recentre(const StripView& strip, int64_t count) {
    const int64_t first = chunkFirst_;
    withSampleType(strip.type, [&](auto sample) {
      using T = decltype(sample);
      const T* raw = reinterpret_cast<const T*>(raw_.get()) + first * strip.bands;
      unmixingRows(raw, count, strip.bands, reinterpret_cast<const T*>(nodata_.get()),
                   hasNodata_.get(), center_.get(), rows_.get(), valid_.get(), weight_.get(),
                   energy_.get(), context_.computeStream());
    });
  }

  void uploadSearch(const PixelSearch& search) {
    context_.select();
    const int columns = std::max(1, search.columns);
    grow(weights_, static_cast<size_t>(search.bands) * columns);
    if (search.columns > 0)
      uploadAsync(weights_.get(), search.weights.data(), search.weights.size(),
                  context_.computeStream());
    grow(constants_, std::max<size_t>(1, search.constants.size()));
    grow(coefficients_, std::max<size_t>(1, search.coefficients.size()));
    if (!search.constants.empty())
      uploadAsync(constants_.get(), search.constants.data(), search.constants.size(),
                  context_.computeStream());
    if (!search.coefficients.empty())
      uploadAsync(coefficients_.get(), search.coefficients.data(), search.coefficients.size(),
                  context_.computeStream());
    deviceSearch_.rule = search.rule;
    deviceSearch_.columns = search.columns;
    deviceSearch_.slots = search.scoreCount();
    deviceSearch_.constants = constants_.get();
    deviceSearch_.coefficients = coefficients_.get();
  }

  // products_ = rows · weights (count x columns, row-major): in cuBLAS's column-major terms
  // productsᵀ = weightsᵀ · rowsᵀ.
  void multiplyWeights(const PixelSearch& search, int64_t count) {
    grow(products_, static_cast<size_t>(count) * std::max(1, search.columns));
    if (search.columns == 0) return;
    const double one = 1.0, zero = 0.0;
    check(cublasDgemm(context_.blas(), CUBLAS_OP_N, CUBLAS_OP_N, search.columns,
                      static_cast<int>(count), search.bands, &one, weights_.get(), search.columns,
                      rows_.get(), search.bands, &zero, products_.get(), search.columns),
          "cublasDgemm");
  }

  void uploadModel(const Unmixing& unmixing) {
    context_.select();
    grow(spectra_, unmixing.spectra.size());
    grow(gram_, unmixing.gram.size());
    grow(unsolved_, 1);
    uploadAsync(spectra_.get(), unmixing.spectra.data(), unmixing.spectra.size(),
                context_.computeStream());
    uploadAsync(gram_.get(), unmixing.gram.data(), unmixing.gram.size(), context_.computeStream());
  }

  // b = E x for each pixel, the active-set solves, and the residual energy when asked.
  void solveChunk(const Unmixing& unmixing, int64_t count) {
    const int p = unmixing.endmembers, bands = unmixing.bands;
    const auto n = static_cast<int>(count);
    const double one = 1.0, zero = 0.0, minusOne = -1.0;
    grow(products_, static_cast<size_t>(count) * p);
    check(cublasDgemm(context_.blas(), CUBLAS_OP_T, CUBLAS_OP_N, p, n, bands, &one, spectra_.get(),
                      bands, rows_.get(), bands, &zero, products_.get(), p),
          "cublasDgemm");
    solveAbundances(gram_.get(), p, unmixing.method, products_.get(), count, valid_.get(),
                    solved_.get(), unsolved_.get(), context_.computeStream());
    if (!unmixing.rmse) return;
    // rows -= solved · spectra: rowsᵀ -= spectraᵀ · solvedᵀ.
    check(cublasDgemm(context_.blas(), CUBLAS_OP_N, CUBLAS_OP_N, bands, n, p, &minusOne,
                      spectra_.get(), bands, solved_.get(), p, &one, rows_.get(), bands),
          "cublasDgemm");
    rowEnergy(rows_.get(), count, bands, energy_.get(), context_.computeStream());
  }

  void downloadChunk(const Unmixing& unmixing, int64_t count, int size, unsigned char* abundances,
                     unsigned char* rmse) {
    const size_t abundanceBytes = static_cast<size_t>(count) * unmixing.endmembers * size;
    unsigned char* encoded = encoded_.get();
    unsigned char* encodedRmse = rmse ? encoded + abundanceBytes : nullptr;
    if (size == 8)
      encodeAbundances(solved_.get(), energy_.get(), valid_.get(), count, unmixing.endmembers,
                       unmixing.bands, reinterpret_cast<double*>(encoded),
                       reinterpret_cast<double*>(encodedRmse), context_.computeStream());
    else
      encodeAbundances(solved_.get(), energy_.get(), valid_.get(), count, unmixing.endmembers,
                       unmixing.bands, reinterpret_cast<float*>(encoded),
                       reinterpret_cast<float*>(encodedRmse), context_.computeStream());
    context_.timed(times_.download, context_.computeStream(), [&] {
      downloadAsync(abundances, encoded, abundanceBytes, context_.computeStream());
      if (rmse)
        downloadAsync(rmse, encodedRmse, static_cast<size_t>(count) * size,
                      context_.computeStream());
    });
    times_.downloadBytes += static_cast<int64_t>(abundanceBytes + (rmse ? count * size : 0));
  }

  GpuContext context_;
  DeviceTimes& times_ = context_.times();
  Moments total_;
  int64_t chunkFirst_ = 0;
  DeviceSearch deviceSearch_;
  // Grown to the largest strip or chunk.
  DeviceArray<unsigned char> raw_, nodata_, hasNodata_, valid_, encoded_;
  DeviceArray<double> rows_, weight_, energy_, ones_, center_, sums_, comoment_, weights_,
      constants_, coefficients_, products_, spectra_, gram_, solved_;
  DeviceArray<Candidate> candidates_;
  DeviceArray<unsigned long long> unsolved_;
};

}  // namespace

std::unique_ptr<UnmixingKernels> makeCudaUnmixingKernels(int device, int64_t memoryBytes,
                                                         std::string description) {
  return std::make_unique<CudaUnmixingKernels>(device, memoryBytes, std::move(description));
}

}  // namespace hyperstream::cuda
