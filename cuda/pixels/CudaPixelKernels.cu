// The unmixing kernels on a GPU: each strip is uploaded and taken in chunks of float64 rows; their
// products with the search's weights or the endmembers are cuBLAS DGEMMs, the moments a DGEMV and
// a DSYRK per chunk (about the chunk's own mean, merged on the host as the CPU's are), the scores
// and the active-set solves kernels of their own.

#include "core/Samples.h"
#include "cuda/core/GpuContext.h"
#include "cuda/core/Transpose.h"
#include "cuda/pixels/CudaPixelKernels.h"
#include "cuda/pixels/PixelDeviceKernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>

namespace hyperstream::cuda {

namespace {

constexpr int64_t kChunkPixels = 1 << 16;

class CudaPixelKernels final : public PixelKernels {
 public:
  CudaPixelKernels(int device, int64_t memoryBytes, std::string description)
      : context_(device, memoryBytes, std::move(description)) {}
  ~CudaPixelKernels() override { context_.finishWork(); }

  std::string name() const override { return context_.description(); }
  HostMemory allocateHost(size_t bytes) override { return context_.allocateHost(bytes); }
  bool takesBandMajor() const override { return true; }
  DeviceTimes deviceTimes() const override { return times_; }

  // Keeps the cube in device memory for a job of several passes when it fits beside a chunk's
  // working arrays.
  bool prepare(const CubeLayout& layout) override {
    context_.select();
    const int bands = layout.bands;
    total_ = Moments(bands);
    pixels_ = layout.pixels;
    const int64_t cubeBytes = layout.pixels * bands * sampleSize(layout.type);
    const int64_t chunkBytes = kChunkPixels * (int64_t{bands} * 8 + 3 * kMaxEndmembers * 8 + 32);
    keepsCube_ = layout.pixels > 0 && cubeBytes + chunkBytes <= context_.budgetBytes();
    if (keepsCube_) grow(raw_, static_cast<size_t>(cubeBytes));
    grow(ones_, kChunkPixels);
    const std::vector<double> ones(kChunkPixels, 1.0);
    check(
        cudaMemcpy(ones_.get(), ones.data(), kChunkPixels * sizeof(double), cudaMemcpyHostToDevice),
        "upload");
    return keepsCube_;
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
    uploadSearch(search);
    SearchFound result;
    result.best.resize(search.scoreCount());
    forEachChunk(strip, search.center.data(), [&](int64_t first, int64_t count) {
      searchChunk(search, strip.firstPixel + first, count, result);
    });
    return result;
  }

  void keepProjection(const StripView& strip, const KeptProjection& projection) override {
    const int k = projection.columns;
    grow(kept_, static_cast<size_t>(pixels_) * k);
    keptColumns_ = k;
    grow(weights_, static_cast<size_t>(projection.bands) * k);
    grow(offset_, k);
    uploadAsync(weights_.get(), projection.weights.data(), projection.weights.size(),
                context_.computeStream());
    uploadAsync(offset_.get(), projection.offset.data(), k, context_.computeStream());
    forEachChunk(strip, projection.center.data(), [&](int64_t first, int64_t count) {
      context_.timed(times_.search, context_.computeStream(), [&] {
        multiply(weights_.get(), projection.bands, k, count);
        keepRows(products_.get(), valid_.get(), offset_.get(), count, k,
                 kept_.get() + (strip.firstPixel + first) * k, context_.computeStream());
      });
    });
    context_.synchronize();
  }

  void keepEnergy(const StripView& strip) override {
    grow(kept_, static_cast<size_t>(pixels_));
    keptColumns_ = 1;
    forEachChunk(strip, nullptr, [&](int64_t first, int64_t count) {
      context_.timed(times_.search, context_.computeStream(), [&] {
        hyperstream::cuda::keepEnergy(energy_.get(), valid_.get(), count,
                                      kept_.get() + strip.firstPixel + first,
                                      context_.computeStream());
      });
    });
    context_.synchronize();
  }

  void deflateKept(const StripView& strip, const std::vector<double>& direction) override {
    grow(weights_, direction.size());
    uploadAsync(weights_.get(), direction.data(), direction.size(), context_.computeStream());
    forEachChunk(strip, nullptr, [&](int64_t first, int64_t count) {
      context_.timed(times_.search, context_.computeStream(), [&] {
        multiply(weights_.get(), strip.bands, 1, count);
        hyperstream::cuda::deflateKept(products_.get(), count,
                                       kept_.get() + strip.firstPixel + first,
                                       context_.computeStream());
      });
    });
    context_.synchronize();
  }

  SearchFound searchKept(const PixelSearch& search) override {
    uploadSearch(search);
    SearchFound result;
    result.best.resize(search.scoreCount());
    const std::vector<double> none(keptColumns_, std::numeric_limits<double>::quiet_NaN());
    uploadValidity<double>(none.data(), keptColumns_);
    forEachChunkOf(
        kept_.get(), pixels_, keptColumns_, search.center.data(),
        [&](int64_t first, int64_t count) { searchChunk(search, first, count, result); });
    return result;
  }

  std::vector<double> keptValues(int64_t pixel) override {
    context_.select();
    std::vector<double> values(keptColumns_);
    downloadAsync(values.data(), kept_.get() + pixel * keptColumns_, values.size(),
                  context_.computeStream());
    context_.synchronize();
    return values;
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

  int64_t classify(const StripView& strip, const AngleLibrary& library, uint16_t* classes,
                   void* bestAngle, void* angles) override {
    context_.select();
    grow(units_, library.units.size());
    uploadAsync(units_.get(), library.units.data(), library.units.size(), context_.computeStream());
    const int size = library.type == OutputType::Float64 ? 8 : 4;
    const int perPixel = angles ? 1 + library.spectra : 1;
    int64_t valid = 0;
    forEachChunk(strip, nullptr, [&](int64_t first, int64_t count) {
      valid += validCount(count);
      // The angles first (aligned for float64), the classes after them.
      const size_t angleBytes = static_cast<size_t>(count) * perPixel * size;
      grow(encoded_, angleBytes + static_cast<size_t>(count) * 2);
      unsigned char* best = encoded_.get();
      unsigned char* all = angles ? best + static_cast<size_t>(count) * size : nullptr;
      auto* deviceClasses = reinterpret_cast<unsigned short*>(best + angleBytes);
      context_.timed(times_.unmix, context_.computeStream(), [&] {
        if (size == 8)
          spectralAngles(rows_.get(), energy_.get(), valid_.get(), count, library.bands,
                         units_.get(), library.spectra, library.maxAngle, deviceClasses,
                         reinterpret_cast<double*>(best), reinterpret_cast<double*>(all),
                         context_.computeStream());
        else
          spectralAngles(rows_.get(), energy_.get(), valid_.get(), count, library.bands,
                         units_.get(), library.spectra, library.maxAngle, deviceClasses,
                         reinterpret_cast<float*>(best), reinterpret_cast<float*>(all),
                         context_.computeStream());
      });
      context_.timed(times_.download, context_.computeStream(), [&] {
        downloadAsync(classes + first, deviceClasses, static_cast<size_t>(count),
                      context_.computeStream());
        downloadAsync(static_cast<unsigned char*>(bestAngle) + first * size, best,
                      static_cast<size_t>(count) * size, context_.computeStream());
        if (angles)
          downloadAsync(static_cast<unsigned char*>(angles) + first * library.spectra * size, all,
                        static_cast<size_t>(count) * library.spectra * size,
                        context_.computeStream());
      });
      times_.downloadBytes += static_cast<int64_t>(angleBytes + count * 2);
    });
    context_.synchronize();
    return valid;
  }

  void windowScores(const WindowStrip& strip, const WindowRule& rule, void* scores) override {
    context_.select();
    const int k = strip.componentCount;
    const auto buffered = static_cast<size_t>(strip.rowCount * strip.width);
    const auto pixels = static_cast<size_t>(strip.scoreRows * strip.width);
    const size_t size = rule.type == OutputType::Float64 ? 8 : 4;
    grow(rows_, buffered * k);
    grow(valid_, buffered);
    grow(encoded_, pixels * size);
    context_.timed(times_.upload, context_.computeStream(), [&] {
      uploadAsync(rows_.get(), strip.components, buffered * k, context_.computeStream());
      uploadAsync(valid_.get(), strip.valid, buffered, context_.computeStream());
    });
    times_.uploadBytes += static_cast<int64_t>(buffered * (k * 8 + 1));
    context_.timed(times_.unmix, context_.computeStream(), [&] {
      if (size == 8)
        localRxScores(rows_.get(), valid_.get(), k, strip.width, strip.firstRow, strip.rowCount,
                      strip.scoreRow, strip.scoreRows, rule.window, rule.guard, rule.shrinkage,
                      rule.noise, reinterpret_cast<double*>(encoded_.get()),
                      context_.computeStream());
      else
        localRxScores(rows_.get(), valid_.get(), k, strip.width, strip.firstRow, strip.rowCount,
                      strip.scoreRow, strip.scoreRows, rule.window, rule.guard, rule.shrinkage,
                      rule.noise, reinterpret_cast<float*>(encoded_.get()),
                      context_.computeStream());
    });
    context_.timed(times_.download, context_.computeStream(), [&] {
      downloadAsync(static_cast<unsigned char*>(scores), encoded_.get(), pixels * size,
                    context_.computeStream());
    });
    times_.downloadBytes += static_cast<int64_t>(pixels * size);
    context_.synchronize();
  }

 private:
  // Uploads the strip and makes its float64 rows chunk by chunk (centred on `center` when not
  // null): rows_, valid_, weight_, energy_; calls work(first pixel of the chunk, pixels in it).
  template <class Work>
  void forEachChunk(const StripView& strip, const double* center, const Work& work) {
    context_.select();
    withSampleType(strip.type, [&](auto sample) {
      using T = decltype(sample);
      uploadValidity<T>(strip.nodata, strip.bands);
      forEachChunkOf(uploadStrip<T>(strip), strip.pixels, strip.bands, center, work);
    });
  }

  // forEachChunk over `pixels` pixel-interleaved spectra already on the device (their validity
  // uploaded).
  template <class T, class Work>
  void forEachChunkOf(const T* raw, int64_t pixels, int bands, const double* center,
                      const Work& work) {
    context_.select();
    if (center) {
      grow(center_, bands);
      uploadAsync(center_.get(), center, bands, context_.computeStream());
    }
    grow(rows_, static_cast<size_t>(kChunkPixels) * bands);
    grow(valid_, kChunkPixels);
    grow(weight_, kChunkPixels);
    grow(energy_, kChunkPixels);
    for (int64_t first = 0; first < pixels; first += kChunkPixels) {
      const int64_t count = std::min(kChunkPixels, pixels - first);
      unmixingRows(raw + first * bands, count, bands, reinterpret_cast<const T*>(nodata_.get()),
                   hasNodata_.get(), center ? center_.get() : nullptr, rows_.get(), valid_.get(),
                   weight_.get(), energy_.get(), context_.computeStream());
      chunkFirst_ = first;
      work(first, count);
    }
  }

  // The valid-pixel rule of the CPU (core/Samples.h), uploaded for samples of type T.
  template <class T>
  void uploadValidity(const double* nodata, int bands) {
    grow(nodata_, bands * sizeof(T));
    grow(hasNodata_, bands);
    const ValidPixel<T> isValid(nodata, bands);
    uploadAsync(reinterpret_cast<T*>(nodata_.get()), isValid.nodataValues().data(), bands,
                context_.computeStream());
    uploadAsync(hasNodata_.get(), isValid.hasNodata().data(), bands, context_.computeStream());
  }

  // One chunk's scores and each block's best pixels, merged into `result`.
  void searchChunk(const PixelSearch& search, int64_t firstPixel, int64_t count,
                   SearchFound& result) {
    const int slots = search.scoreCount();
    result.validPixels += validCount(count);
    const int blocks = searchBlockCount(count);
    grow(candidates_, static_cast<size_t>(blocks) * slots);
    context_.timed(times_.search, context_.computeStream(), [&] {
      multiply(weights_.get(), search.bands, search.columns, count);
      searchBlocks(deviceRule_, products_.get(), energy_.get(), valid_.get(), count, firstPixel,
                   candidates_.get(), context_.computeStream());
    });
    std::vector<Candidate> found(static_cast<size_t>(blocks) * slots);
    downloadAsync(found.data(), candidates_.get(), found.size(), context_.computeStream());
    context_.synchronize();
    for (int s = 0; s < slots; ++s)
      for (int b = 0; b < blocks; ++b)
        if (found[static_cast<size_t>(s) * blocks + b].beats(result.best[s]))
          result.best[s] = found[static_cast<size_t>(s) * blocks + b];
  }

  // The strip on the device, pixel-interleaved: uploaded (into the kept cube at its place, when
  // the kernels keep it; a band-major strip through a staging array), or, in later passes of a
  // kept cube (null data), where the first pass put it.
  template <class T>
  const T* uploadStrip(const StripView& strip) {
    const int bands = strip.bands;
    const size_t bytes = static_cast<size_t>(strip.pixels) * bands * sizeof(T);
    if (!keepsCube_) grow(raw_, bytes);
    T* target = reinterpret_cast<T*>(raw_.get()) + (keepsCube_ ? strip.firstPixel * bands : 0);
    if (!strip.data) return target;
    const cudaStream_t stream = context_.computeStream();
    context_.timed(times_.upload, stream, [&] {
      if (!strip.bandMajor) {
        check(cudaMemcpyAsync(target, strip.data, bytes, cudaMemcpyHostToDevice, stream), "upload");
        return;
      }
      grow(staging_, bytes);
      uploadBandMajor(strip.data, strip.pixels, bands, sizeof(T), strip.pixels, staging_.get(),
                      target, stream);
    });
    times_.uploadBytes += static_cast<int64_t>(bytes);
    return target;
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
    // The ranges from the rows as they are (not centred yet), for the checks of scale.
    grow(low_, bands);
    grow(high_, bands);
    bandRanges(rows_.get(), valid_.get(), count, bands, low_.get(), high_.get(),
               context_.computeStream());
    downloadAsync(chunk.minimum.data(), low_.get(), bands, context_.computeStream());
    downloadAsync(chunk.maximum.data(), high_.get(), bands, context_.computeStream());
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
    const int64_t first = chunkFirst_ + (keepsCube_ ? strip.firstPixel : 0);
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
    deviceRule_ = search.scoreRule();
    deviceRule_.constants = constants_.get();  // the device's copies
    deviceRule_.coefficients = coefficients_.get();
  }

  // products_ = rows · weights (count x columns, row-major): in cuBLAS's column-major terms
  // productsᵀ = weightsᵀ · rowsᵀ.
  void multiply(const double* weights, int bands, int columns, int64_t count) {
    grow(products_, static_cast<size_t>(count) * std::max(1, columns));
    if (columns == 0) return;
    const double one = 1.0, zero = 0.0;
    check(cublasDgemm(context_.blas(), CUBLAS_OP_N, CUBLAS_OP_N, columns, static_cast<int>(count),
                      bands, &one, weights, columns, rows_.get(), bands, &zero, products_.get(),
                      columns),
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
  int64_t pixels_ = 0;  // of the image
  int keptColumns_ = 0;
  bool keepsCube_ = false;  // raw_ holds the whole cube (else the current strip)
  int64_t chunkFirst_ = 0;
  ScoreRule deviceRule_;
  // Grown to the largest strip or chunk.
  DeviceArray<unsigned char> raw_, staging_, nodata_, hasNodata_, valid_, encoded_;
  DeviceArray<double> rows_, weight_, energy_, ones_, center_, sums_, comoment_, weights_,
      constants_, coefficients_, products_, spectra_, gram_, solved_, kept_, offset_, low_, high_,
      units_;
  DeviceArray<Candidate> candidates_;
  DeviceArray<unsigned long long> unsolved_;
};

}  // namespace

std::unique_ptr<PixelKernels> makeCudaPixelKernels(int device, int64_t memoryBytes,
                                                   std::string description) {
  return std::make_unique<CudaPixelKernels>(device, memoryBytes, std::move(description));
}

}  // namespace hyperstream::cuda
