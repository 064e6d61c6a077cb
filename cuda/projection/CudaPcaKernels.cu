// PCA's kernels on a GPU: strips cross the bus in the file's own type into page-locked host
// buffers and two device slots (or straight into a device copy of the whole cube when it fits;
// band-major strips through a staging array, made pixel-interleaved on the device), are converted
// and centred on the GPU, and go through cuBLAS GEMMs (the moments' Gram matrix
// exactly in int8 digits on the tensor cores for 8/16-bit integers, else in float64; the
// projection in float32 or float64). Uploads run on the copy stream, so copying strip i+1
// overlaps computing strip i while the engine's reader thread reads strip i+2. One file, about
// 770 lines: the implementation of one kernel interface (projection/PcaKernels.h) on the device,
// its buffers and streams shared by every stage; the device code is in PcaDeviceKernels.cu.

#include "core/Samples.h"
#include "cuda/core/GpuContext.h"
#include "cuda/core/Transpose.h"
#include "cuda/projection/CudaPcaKernels.h"
#include "cuda/projection/PcaDeviceKernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace hyperstream::cuda {

namespace {

// Pixels per kernel/GEMM chunk at most: the float64 copy of a chunk stays under this size
// (cuBLAS DGEMM ran the Gram of 198 bands faster in chunks of 165 000 pixels than of 1.35 M).
constexpr int64_t kChunkBytes = 256 * kMiB;

class CudaPcaKernels final : public PcaKernels {
 public:
  CudaPcaKernels(int device, int64_t memoryBytes, std::string description)
      : context_(device, memoryBytes, std::move(description)) {
    for (auto& slot : slotFree_) slot = std::make_unique<Event>();
  }
  // Outstanding work must end before the buffers it uses are freed.
  ~CudaPcaKernels() override { context_.finishWork(); }

  std::string name() const override { return context_.description(); }
  HostMemory allocateHost(size_t bytes) override { return context_.allocateHost(bytes); }
  bool takesBandMajor() const override { return true; }

  bool prepare(const CubeLayout& layout) override {
    context_.select();
    layout_ = layout;
    sampleSize_ = sampleSize(layout.type);
    const int bands = layout.bands;
    const int components = std::max(1, layout.maxComponents);
    const int rows = std::max(bands, components);
    const int64_t stripBytes = layout.maxStripPixels * bands * sampleSize_;
    const int64_t cubeBytes = layout.pixels * bands * sampleSize_;
    auto workBytes = [&](int64_t pixels) {
      // The float64 work chunk, the projected chunk and its encoded samples (up to 8 bytes each),
      // the valid flags.
      return pixels * (bands * int64_t{8} + components * int64_t{16} + 1) +
             3 * int64_t{reductionBlocks(pixels)} * rows * 8;
    };
    const int64_t stagingBytes = layout.bandMajor ? stripBytes : 0;
    const int64_t fixedBytes = int64_t{bands} * bands * 8 + int64_t{rows} * components * 8 +
                               int64_t{rows} * 64 + stagingBytes + 8 * kMiB;
    const int64_t longestChunk = std::max<int64_t>(1024, kChunkBytes / (int64_t{bands} * 8));
    chunkPixels_ = std::min(layout.pixels, longestChunk);
    const int64_t budget = context_.budgetBytes();
    resident_ = cubeBytes + workBytes(chunkPixels_) + fixedBytes <= budget;
    if (!resident_) {
      chunkPixels_ = std::min(layout.maxStripPixels, longestChunk);
      while (2 * stripBytes + workBytes(chunkPixels_) + fixedBytes > budget && chunkPixels_ > 1024)
        chunkPixels_ /= 2;
      const int64_t needed = 2 * stripBytes + workBytes(chunkPixels_) + fixedBytes;
      if (needed > budget)
        throw DeviceError("the GPU memory budget (" + std::to_string(budget / kMiB) +
                          " MiB) is too small for one strip (" + std::to_string(needed / kMiB + 1) +
                          " MiB needed)");
    }

    // Everything is allocated here, so that a GPU short of memory fails before the first pass.
    cube_ = DeviceArray<unsigned char>(resident_ ? cubeBytes : 0);
    for (auto& slot : slots_) slot = DeviceArray<unsigned char>(resident_ ? 0 : stripBytes);
    staging_ = DeviceArray<unsigned char>(stagingBytes);
    work_ = DeviceArray<double>(static_cast<size_t>(chunkPixels_) * bands);
    // Projections go strip by strip: their results need no longer chunks than strips.
    const size_t projected = static_cast<size_t>(std::min(chunkPixels_, layout.maxStripPixels));
    result_ = DeviceArray<double>(projected * components);
    encoded_ = DeviceArray<unsigned char>(projected * components * sizeof(double));
    valid_ = DeviceArray<unsigned char>(chunkPixels_);
    partials_ = DeviceArray<double>(3 * static_cast<size_t>(reductionBlocks(chunkPixels_)) * rows);
    gram_ = DeviceArray<double>(static_cast<size_t>(bands) * bands);
    sum_ = DeviceArray<double>(bands);
    low_ = DeviceArray<double>(rows);
    high_ = DeviceArray<double>(rows);
    planDigits();
    shift_ = DeviceArray<double>(bands);
    center_ = DeviceArray<double>(bands);
    weights_ = DeviceArray<double>(static_cast<size_t>(bands) * components);
    restore_ = DeviceArray<double>(static_cast<size_t>(rows) * components);
    offset_ = DeviceArray<double>(rows);
    scale_ = DeviceArray<double>(2 * static_cast<size_t>(components));
    nodataValue_ = DeviceArray<double>(bands);
    hasNodata_ = DeviceArray<unsigned char>(bands);
    count_ = DeviceArray<unsigned long long>(1);
    nodataKnown_ = false;
    resetMoments();
    times_ = DeviceTimes{};
    return resident_;
  }

  void accumulateMoments(const StripView& strip) override {
    context_.select();
    withSampleType(strip.type, [&](auto sample) { accumulate<decltype(sample)>(strip); });
  }

  Moments takeMoments(int bands) override {
    context_.select();
    withSampleType(layout_.type, [&](auto sample) { addPendingMoments<decltype(sample)>(); });
    context_.synchronize();
    Moments result;
    result.bands = bands;
    unsigned long long counted = 0;
    check(cudaMemcpy(&counted, count_.get(), sizeof counted, cudaMemcpyDeviceToHost), "download");
    result.count = static_cast<int64_t>(counted) + hostCounted_;
    std::vector<double> sum(bands), gram(static_cast<size_t>(bands) * bands);
    result.minimum.resize(bands);
    result.maximum.resize(bands);
    download(sum.data(), sum_.get(), bands);
    download(gram.data(), gram_.get(), gram.size());
    download(result.minimum.data(), low_.get(), bands);
    download(result.maximum.data(), high_.get(), bands);
    result.mean.assign(bands, 0.0);
    result.comoment.assign(gram.size(), 0.0);
    centreMoments(gram, sum, shiftHost_.data(), result);
    resetMoments();
    return result;
  }

  // Mean and co-moment of result.count values from the Gram matrix and sums of their deviations
  // from `shift` (null: 0): Σ(x-s)(x-s)^T = M + n (m-s)(m-s)^T; one triangle, mirrored (exactly
  // symmetric).
  static void centreMoments(const std::vector<double>& gram, const std::vector<double>& sum,
                            const double* shift, Moments& result) {
    if (result.count == 0) return;
    const int bands = result.bands;
    const double n = static_cast<double>(result.count);
    for (int b = 0; b < bands; ++b) result.mean[b] = (shift ? shift[b] : 0.0) + sum[b] / n;
    for (int j = 0; j < bands; ++j)
      for (int i = 0; i <= j; ++i) {
        const double value = gram[static_cast<size_t>(j) * bands + i] - sum[i] * sum[j] / n;
        result.comoment[static_cast<size_t>(i) * bands + j] = value;
        result.comoment[static_cast<size_t>(j) * bands + i] = value;
      }
  }

  // MNF's noise moments on the device: each moments chunk's differences (noiseDifferences) in
  // the work array, their Gram matrix by DGEMM and sums by DGEMV, after the chunk's own moments.
  bool takesNoise(SampleType) const override { return true; }

  void prepareNoise(int rowStep, int columnStep, int64_t width) override {
    context_.select();
    noise_.rowStep = rowStep;
    noise_.columnStep = columnStep;
    noise_.width = width;
    const int bands = layout_.bands;
    noise_.above = DeviceArray<unsigned char>(static_cast<size_t>(width) * bands * sampleSize_);
    noise_.hasAbove = false;
    noise_.gram = DeviceArray<double>(static_cast<size_t>(bands) * bands);
    noise_.sum = DeviceArray<double>(bands);
    noise_.count = DeviceArray<unsigned long long>(1);
    const std::vector<double> ones(static_cast<size_t>(chunkPixels_), 1.0);
    noise_.ones = DeviceArray<double>(ones.size());
    check(cudaMemcpy(noise_.ones.get(), ones.data(), ones.size() * sizeof(double),
                     cudaMemcpyHostToDevice),
          "upload");
    resetNoise();
    noise_.on = true;
  }

  void setNoiseRowAbove(const StripView& row) override {
    context_.select();
    uploadPixels(row, noise_.above.get(), context_.computeStream());
    context_.synchronize();
    noise_.hasAbove = true;
  }

  Moments takeNoiseMoments(int bands) override {
    context_.select();
    context_.synchronize();
    Moments result;  // its constructor lives in the engine, which this library does not link
    result.bands = bands;
    result.mean.assign(bands, 0.0);
    result.comoment.assign(static_cast<size_t>(bands) * bands, 0.0);
    result.minimum.assign(bands, 0.0);
    result.maximum.assign(bands, 0.0);
    unsigned long long counted = 0;
    check(cudaMemcpy(&counted, noise_.count.get(), sizeof counted, cudaMemcpyDeviceToHost),
          "download");
    result.count = static_cast<int64_t>(counted);
    std::vector<double> sum(bands), gram(static_cast<size_t>(bands) * bands);
    download(sum.data(), noise_.sum.get(), bands);
    download(gram.data(), noise_.gram.get(), gram.size());
    centreMoments(gram, sum, nullptr, result);
    resetNoise();
    return result;
  }

  ComponentRange componentRange(const StripView& strip, const Projection& projection) override {
    context_.select();
    const int components = projection.components;
    resetRanges(components);  // the band ranges of pass 1 were taken already
    withSampleType(strip.type, [&](auto sample) {
      using T = decltype(sample);
      const T* raw = stripOnDevice<T>(strip);
      forEachProjectedChunk<T, float>(strip, raw, projection, 0.0, times_.range,
                                      [&](int64_t, int64_t pixels, const float* values) {
                                        context_.timed(times_.range, context_.computeStream(), [&] {
                                          rangePartials(values, pixels, components, valid_.get(),
                                                        partials_.get(), context_.computeStream());
                                          mergePartials(partials_.get(), reductionBlocks(pixels),
                                                        components, nullptr, low_.get(),
                                                        high_.get(), context_.computeStream());
                                        });
                                      });
      releaseSlot();
    });
    ComponentRange range;
    range.minimum.resize(components);
    range.maximum.resize(components);
    downloadAsync(range.minimum.data(), low_.get(), components, context_.computeStream());
    downloadAsync(range.maximum.data(), high_.get(), components, context_.computeStream());
    context_.synchronize();
    return range;
  }

  void project(const StripView& strip, const Projection& projection, const OutputEncoding& encoding,
               void* output) override {
    context_.select();
    if (projection.rebuilds()) return rebuild(strip, projection, encoding, output);
    if (projection.scores.active()) return score(strip, projection, encoding, output);
    const int components = projection.components;
    if (encoding.type == OutputType::Byte) {
      std::vector<double> scale(encoding.byteMinimum);
      scale.insert(scale.end(), encoding.byteScale.begin(), encoding.byteScale.end());
      check(cudaMemcpyAsync(scale_.get(), scale.data(), scale.size() * sizeof(double),
                            cudaMemcpyHostToDevice, context_.computeStream()),
            "upload");
    }
    auto* out = static_cast<unsigned char*>(output);
    withSampleType(strip.type, [&](auto sample) {
      using T = decltype(sample);
      const T* raw = stripOnDevice<T>(strip);
      auto emit = [&](auto* values, int64_t first, int64_t pixels, size_t size) {
        downloadChunk(out + first * components * size, values,
                      static_cast<size_t>(pixels) * components * size);
      };
      // Float outputs are the projection itself, nodata in place.
      auto projectFloat = [&](auto precision) {
        using C = decltype(precision);
        forEachProjectedChunk<T, C>(strip, raw, projection, encoding.nodata, times_.projection,
                                    [&](int64_t first, int64_t pixels, C* values) {
                                      emit(values, first, pixels, sizeof(C));
                                    });
      };
      if (encoding.type == OutputType::Float64) {
        projectFloat(double{});
      } else if (encoding.type == OutputType::Float32) {
        projectFloat(float{});
      } else if (encoding.type == OutputType::Byte) {
        forEachProjectedChunk<T, float>(
            strip, raw, projection, 0.0, times_.projection,
            [&](int64_t first, int64_t pixels, float* values) {
              context_.timed(times_.projection, context_.computeStream(), [&] {
                encodeByte(values, pixels, components, valid_.get(), scale_.get(),
                           scale_.get() + components, encoding.byteLow,
                           static_cast<unsigned char>(encoding.nodata), encoded_.get(),
                           context_.computeStream());
              });
              emit(encoded_.get(), first, pixels, 1);
            });
      }
      releaseSlot();
    });
    context_.synchronize();
  }

  DeviceTimes deviceTimes() const override { return times_; }

 private:
  // Projects, rebuilds and encodes chunk by chunk; the rebuilt samples cross the bus.
  void rebuild(const StripView& strip, const Projection& projection, const OutputEncoding& encoding,
               void* output) {
    const int components = projection.components, outputs = projection.outputs;
    uploadAsync(restore_.get(), projection.restore.data(), projection.restore.size(),
                context_.computeStream());
    uploadAsync(offset_.get(), projection.offset.data(), projection.offset.size(),
                context_.computeStream());
    auto* out = static_cast<unsigned char*>(output);
    withSampleType(strip.type, [&](auto sample) {
      using T = decltype(sample);
      const T* raw = stripOnDevice<T>(strip);
      withOutputType(encoding.type, [&](auto outputSample) {
        using Out = decltype(outputSample);
        Out* encoded = reinterpret_cast<Out*>(encoded_.get());
        auto rebuildIn = [&](auto precision) {
          using C = decltype(precision);
          forEachProjectedChunk<T, C>(
              strip, raw, projection, 0.0, times_.projection,
              [&](int64_t first, int64_t pixels, C* values) {
                context_.timed(times_.projection, context_.computeStream(), [&] {
                  cuda::rebuild(values, pixels, components, valid_.get(), restore_.get(),
                                offset_.get(), outputs, encoding.nodata, encoding.avoidNodata,
                                encoded, context_.computeStream());
                });
                downloadChunk(out + first * outputs * sizeof(Out), encoded,
                              static_cast<size_t>(pixels) * outputs * sizeof(Out));
              });
        };
        if (projectsInFloat(projection, encoding))
          rebuildIn(float{});
        else
          rebuildIn(double{});
      });
      releaseSlot();
    });
    context_.synchronize();
  }

  // Projects in float64 and scores chunk by chunk (DetectionScores); the scores cross the bus.
  void score(const StripView& strip, const Projection& projection, const OutputEncoding& encoding,
             void* output) {
    const DetectionScores& rule = projection.scores;
    const auto targets = static_cast<int>(rule.targetPower.size());
    const int outputs = projection.outputCount();
    if (targets > 0)
      uploadAsync(offset_.get(), rule.targetPower.data(), rule.targetPower.size(),
                  context_.computeStream());
    auto* out = static_cast<unsigned char*>(output);
    withSampleType(strip.type, [&](auto sample) {
      using T = decltype(sample);
      const T* raw = stripOnDevice<T>(strip);
      auto scoreAs = [&](auto outputSample) {
        using Out = decltype(outputSample);
        Out* encoded = reinterpret_cast<Out*>(encoded_.get());
        forEachProjectedChunk<T, double>(
            strip, raw, projection, 0.0, times_.projection,
            [&](int64_t first, int64_t pixels, double* values) {
              context_.timed(times_.projection, context_.computeStream(), [&] {
                cuda::scores(values, pixels, projection.components, rule.whitened, offset_.get(),
                             targets, valid_.get(), encoding.nodata, encoded,
                             context_.computeStream());
              });
              downloadChunk(out + first * outputs * sizeof(Out), encoded,
                            static_cast<size_t>(pixels) * outputs * sizeof(Out));
            });
      };
      if (encoding.type == OutputType::Float64)
        scoreAs(double{});
      else
        scoreAs(float{});
      releaseSlot();
    });
    context_.synchronize();
  }

  // An encoded chunk to the host, timed as a download.
  void downloadChunk(unsigned char* target, const void* values, size_t bytes) {
    context_.timed(times_.download, context_.computeStream(), [&] {
      check(
          cudaMemcpyAsync(target, values, bytes, cudaMemcpyDeviceToHost, context_.computeStream()),
          "download");
    });
    times_.downloadBytes += static_cast<int64_t>(bytes);
  }

  void resetMoments() {
    const int bands = layout_.bands;
    check(cudaMemsetAsync(gram_.get(), 0, gram_.size() * sizeof(double), context_.computeStream()),
          "memset");
    check(cudaMemsetAsync(sum_.get(), 0, bands * sizeof(double), context_.computeStream()),
          "memset");
    check(cudaMemsetAsync(count_.get(), 0, sizeof(unsigned long long), context_.computeStream()),
          "memset");
    resetRanges(bands);
    hostCounted_ = 0;
    shiftHost_.clear();
    pendingPixels_ = 0;
    context_.synchronize();
  }

  void resetRanges(int rows) {
    const std::vector<double> infinite(rows, std::numeric_limits<double>::infinity());
    const std::vector<double> negative(rows, -std::numeric_limits<double>::infinity());
    check(cudaMemcpyAsync(low_.get(), infinite.data(), rows * sizeof(double),
                          cudaMemcpyHostToDevice, context_.computeStream()),
          "upload");
    check(cudaMemcpyAsync(high_.get(), negative.data(), rows * sizeof(double),
                          cudaMemcpyHostToDevice, context_.computeStream()),
          "upload");
  }

  void resetNoise() {
    const int bands = layout_.bands;
    check(cudaMemsetAsync(noise_.gram.get(), 0, static_cast<size_t>(bands) * bands * sizeof(double),
                          context_.computeStream()),
          "memset");
    check(cudaMemsetAsync(noise_.sum.get(), 0, bands * sizeof(double), context_.computeStream()),
          "memset");
    check(cudaMemsetAsync(noise_.count.get(), 0, sizeof(unsigned long long),
                          context_.computeStream()),
          "memset");
  }

  // The noise differences of `pixels` pixels from `first` of a segment of rows in device memory
  // (the resident cube, or a strip's slot) into the noise moments, through the work array.
  template <class T>
  void addNoise(const T* segment, int64_t first, int64_t pixels, int bands) {
    const T* nodata = alwaysValid_ ? nullptr : reinterpret_cast<const T*>(nodataValue_.get());
    const T* above = noise_.hasAbove ? reinterpret_cast<const T*>(noise_.above.get()) : nullptr;
    context_.timed(times_.moments, context_.computeStream(), [&] {
      for (int64_t done = 0; done < pixels; done += chunkPixels_) {
        const int64_t count = std::min(chunkPixels_, pixels - done);
        double* x = work_.get();
        noiseDifferences(segment, above, first + done, count, noise_.width, bands, noise_.rowStep,
                         noise_.columnStep, nodata, hasNodata_.get(), x, noise_.count.get(),
                         context_.computeStream());
        const double one = 1.0;
        check(cublasDgemm(context_.blas(), CUBLAS_OP_N, CUBLAS_OP_T, bands, bands,
                          static_cast<int>(count), &one, x, bands, x, bands, &one,
                          noise_.gram.get(), bands),
              "cublasDgemm");
        check(cublasDgemv(context_.blas(), CUBLAS_OP_N, bands, static_cast<int>(count), &one, x,
                          bands, noise_.ones.get(), 1, &one, noise_.sum.get(), 1),
              "cublasDgemv");
      }
    });
  }

  // Streaming: the strip's last row becomes the next strip's row above.
  void keepLastRow(const StripView& strip, const unsigned char* raw) {
    if (!noise_.on || resident_) return;
    const size_t rowBytes = static_cast<size_t>(noise_.width) * strip.bands * sampleSize_;
    const size_t offset =
        static_cast<size_t>(strip.pixels - noise_.width) * strip.bands * sampleSize_;
    check(cudaMemcpyAsync(noise_.above.get(), raw + offset, rowBytes, cudaMemcpyDeviceToDevice,
                          context_.computeStream()),
          "copy");
    noise_.hasAbove = true;
  }

  template <class T>
  void accumulate(const StripView& strip) {
    const int bands = strip.bands;
    const T* raw = stripOnDevice<T>(strip);
    learnNodata<T>(strip);
    if (shiftHost_.empty()) {
      // The first valid pixel of the image: close to the mean, so little cancels when the
      // shift is taken out at the end, and integer samples stay exact in float64.
      const ValidPixel<T> isValid(strip.nodata, bands);
      const T* data = static_cast<const T*>(strip.data);
      const SampleLayout at = strip.layout();
      std::vector<T> pixel(bands);
      auto take = [&](int64_t p) {
        for (int b = 0; b < bands; ++b) pixel[b] = data[p * at.pixelStep + b * at.bandStep];
        return pixel.data();
      };
      int64_t p = 0;
      while (p < strip.pixels && !isValid(take(p))) ++p;
      if (p < strip.pixels) {
        shiftHost_.assign(pixel.begin(), pixel.end());
        check(cudaMemcpyAsync(shift_.get(), shiftHost_.data(), bands * sizeof(double),
                              cudaMemcpyHostToDevice, context_.computeStream()),
              "upload");
      }
    }
    if (shiftHost_.empty()) {  // no valid pixel yet: nothing to add
      keepLastRow(strip, reinterpret_cast<const unsigned char*>(raw));
      releaseSlot();
      return;
    }
    if (!resident_) {
      addMoments(raw, strip.pixels, strip, raw);
      keepLastRow(strip, reinterpret_cast<const unsigned char*>(raw));
      releaseSlot();
      return;
    }
    // Resident strips lie one after another in device memory, so their moments run on whole
    // chunks as soon as the reader has delivered one (at most a chunk remains when pass 1 has read
    // the file). The chunks then do not shrink with the host's strips, which are low when several
    // GPUs share the host's memory budget, and per-chunk launches stay few.
    if (pendingPixels_ > 0 && pendingFirst_ + pendingPixels_ != strip.firstPixel)
      addPendingMoments<T>();
    if (pendingPixels_ == 0) pendingFirst_ = strip.firstPixel;
    pendingPixels_ += strip.pixels;
    pendingStrip_ = strip;
    pendingStrip_.data = nullptr;
    pendingStrip_.nodata = nullptr;  // known already (learnNodata)
    const int64_t chunk = momentChunkPixels<T>();
    const int64_t whole = pendingPixels_ / chunk * chunk;
    if (whole > 0) {
      addMoments(residentPixels<T>(pendingFirst_), whole, pendingStrip_, residentPixels<T>(0));
      pendingFirst_ += whole;
      pendingPixels_ -= whole;
    }
  }

  // The moments of the resident pixels not yet added.
  template <class T>
  void addPendingMoments() {
    if (pendingPixels_ == 0) return;
    addMoments(residentPixels<T>(pendingFirst_), pendingPixels_, pendingStrip_,
               residentPixels<T>(0));
    pendingPixels_ = 0;
  }

  template <class T>
  const T* residentPixels(int64_t firstPixel) const {
    return reinterpret_cast<const T*>(cube_.get()) + firstPixel * layout_.bands;
  }

  // The pixels per moments chunk: the digit path's or the float64 path's.
  template <class T>
  int64_t momentChunkPixels() const {
    if constexpr (std::is_integral_v<T> && sizeof(T) <= 2)
      if (digitPixels_ > 0) return digitPixels_;
    return chunkPixels_;
  }

  // Adds `pixels` pixels at device pointer `raw` to the running moments, chunk by chunk, and
  // (MNF) their noise differences, `raw` lying in the segment of rows that starts at `segment`.
  template <class T>
  void addMoments(const T* raw, int64_t pixelCount, const StripView& strip, const T* segment) {
    if (noise_.on) addNoise(segment, (raw - segment) / strip.bands, pixelCount, strip.bands);
    if constexpr (std::is_integral_v<T> && sizeof(T) <= 2) {
      if (digitPixels_ > 0) {
        addDigitMoments(raw, pixelCount, strip);
        return;
      }
    }
    const int bands = strip.bands;
    context_.timed(times_.moments, context_.computeStream(), [&] {
      for (int64_t first = 0; first < pixelCount; first += chunkPixels_) {
        const int64_t pixels = std::min(chunkPixels_, pixelCount - first);
        const T* chunk = raw + first * bands;
        markValidPixels(strip, chunk, pixels);
        double* x = work_.get();
        centre(chunk, pixels, bands, valid_.get(), shift_.get(), x, partials_.get(),
               context_.computeStream());
        mergePartials(partials_.get(), reductionBlocks(pixels), bands, sum_.get(), low_.get(),
                      high_.get(), context_.computeStream());
        // GEMM rather than SYRK: on the H100 cuBLAS's DGEMM does this shape 2.4x faster than
        // its DSYRK although it computes both triangles (bench_gpu).
        const double one = 1.0;
        check(cublasDgemm(context_.blas(), CUBLAS_OP_N, CUBLAS_OP_T, bands, bands,
                          static_cast<int>(pixels), &one, x, bands, x, bands, &one, gram_.get(),
                          bands),
              "cublasDgemm");
      }
    });
  }

  // The exact moments of 8/16-bit integers: the deviations' int8 digits (Kernels.h) multiplied on
  // the tensor cores, one int8 GEMM of the stacked digit planes with themselves per chunk of at
  // most 2^18 pixels (each digit product is at most 2^12, so no int32 sum overflows), combined in
  // 64 bits. One GEMM of three times the width instead of six: one launch, and a shape that keeps
  // more of the tensor cores busy, for half again the multiply-adds. The work array holds the
  // products, then the three digit planes.
  template <class T>
  void addDigitMoments(const T* raw, int64_t pixelCount, const StripView& strip) {
    const int bands = strip.bands;
    auto* products = reinterpret_cast<int32_t*>(work_.get());
    int8_t* planes = reinterpret_cast<int8_t*>(work_.get()) + digitPlanesOffset_;
    const int stacked = 3 * paddedBands_;
    context_.timed(times_.moments, context_.computeStream(), [&] {
      for (int64_t first = 0; first < pixelCount; first += digitPixels_) {
        const int64_t pixels = std::min(digitPixels_, pixelCount - first);
        const T* chunk = raw + first * bands;
        markValidPixels(strip, chunk, pixels);
        bandStatistics(chunk, pixels, bands, valid_.get(), shift_.get(), partials_.get(),
                       context_.computeStream());
        mergePartials(partials_.get(), reductionBlocks(pixels), bands, sum_.get(), low_.get(),
                      high_.get(), context_.computeStream());
        // The GEMM runs over this chunk's pixels only (padded to 16), not the longest chunk's.
        const int64_t depth = (pixels + 15) / 16 * 16;
        splitDigits(chunk, pixels, bands, valid_.get(), shift_.get(), digitLd_, depth, paddedBands_,
                    planes, context_.computeStream());
        const int32_t one = 1, zero = 0;
        check(cublasGemmEx(context_.blas(), CUBLAS_OP_T, CUBLAS_OP_N, stacked, stacked,
                           static_cast<int>(depth), &one, planes, CUDA_R_8I,
                           static_cast<int>(digitLd_), planes, CUDA_R_8I,
                           static_cast<int>(digitLd_), &zero, products, CUDA_R_32I, stacked,
                           CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx (int8)");
        combineDigits(products, bands, paddedBands_, gram_.get(), context_.computeStream());
      }
    });
  }

  // Sizes the digit path into the work array, and checks that cuBLAS runs int8 GEMMs here;
  // digitPixels_ stays 0 (the float64 path) for other types or when either fails.
  void planDigits() {
    digitPixels_ = 0;
    if (layout_.type != SampleType::Byte && layout_.type != SampleType::Int16 &&
        layout_.type != SampleType::UInt16)
      return;
    constexpr int64_t kMaxDigitPixels = int64_t{1} << 18;
    paddedBands_ = (layout_.bands + 3) / 4 * 4;
    const int64_t pixels = std::min(chunkPixels_, kMaxDigitPixels);
    digitLd_ = (pixels + 15) / 16 * 16;
    const int64_t productBytes = 9 * int64_t{paddedBands_} * paddedBands_ * 4;
    digitPlanesOffset_ = (productBytes + 255) / 256 * 256;
    const int64_t needed = digitPlanesOffset_ + 3 * int64_t{paddedBands_} * digitLd_;
    if (needed > static_cast<int64_t>(work_.size() * sizeof(double))) return;
    // One small int8 GEMM on the (zeroed) work array: some GPUs or cuBLAS builds refuse them.
    check(cudaMemsetAsync(work_.get(), 0, needed, context_.computeStream()), "memset");
    const int32_t one = 1, zero = 0;
    const auto* planes = reinterpret_cast<const int8_t*>(work_.get()) + digitPlanesOffset_;
    const cublasStatus_t status = cublasGemmEx(
        context_.blas(), CUBLAS_OP_T, CUBLAS_OP_N, 4, 4, 16, &one, planes, CUDA_R_8I, 16, planes,
        CUDA_R_8I, 16, &zero, work_.get(), CUDA_R_32I, 4, CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT);
    context_.synchronize();
    if (status == CUBLAS_STATUS_SUCCESS) digitPixels_ = pixels;
  }

  // valid_ for `pixels` pixels of the strip starting at device pointer `chunk`, the valid ones
  // added to the moments' count.
  template <class T>
  void markValidPixels(const StripView& strip, const T* chunk, int64_t pixels) {
    learnNodata<T>(strip);
    if (alwaysValid_) {
      check(cudaMemsetAsync(valid_.get(), 1, pixels, context_.computeStream()), "memset");
      hostCounted_ += pixels;
      return;
    }
    markValid(chunk, pixels, strip.bands, reinterpret_cast<const T*>(nodataValue_.get()),
              hasNodata_.get(), valid_.get(), count_.get(), context_.computeStream());
  }

  // Uploads the nodata rule of the job's strips (the CPU's rule) on the first strip.
  template <class T>
  void learnNodata(const StripView& strip) {
    if (nodataKnown_) return;
    const int bands = strip.bands;
    const ValidPixel<T> isValid(strip.nodata, bands);
    alwaysValid_ = isValid.alwaysValid();
    check(cudaMemcpy(nodataValue_.get(), isValid.nodataValues().data(), bands * sizeof(T),
                     cudaMemcpyHostToDevice),
          "upload");
    check(cudaMemcpy(hasNodata_.get(), isValid.hasNodata().data(), bands, cudaMemcpyHostToDevice),
          "upload");
    nodataKnown_ = true;
  }

  // The strip's samples in device memory: in the resident cube, or uploaded into the next slot.
  // Returns once the host buffer may be reused; the compute stream waits for the upload.
  template <class T>
  const T* stripOnDevice(const StripView& strip) {
    const size_t bytes = static_cast<size_t>(strip.pixels) * strip.bands * sizeof(T);
    unsigned char* target = nullptr;
    if (resident_) {
      target = cube_.get() + strip.firstPixel * strip.bands * sizeof(T);
      if (!strip.data) return reinterpret_cast<const T*>(target);
    } else {
      if (!strip.data) throw DeviceError("internal: a strip without data on a streaming GPU");
      slot_ ^= 1;
      target = slots_[slot_].get();
      // The slot's previous strip must be done with.
      check(cudaStreamWaitEvent(context_.copyStream(), *slotFree_[slot_], 0),
            "cudaStreamWaitEvent");
    }
    context_.timed(times_.upload, context_.copyStream(),
                   [&] { uploadPixels(strip, target, context_.copyStream()); });
    times_.uploadBytes += static_cast<int64_t>(bytes);
    context_.computeAfterCopy();
    return reinterpret_cast<const T*>(target);
  }

  // A host strip into `target` pixel-interleaved, on `stream`: a band-major one through the
  // staging array (the next upload on the stream waits for its transpose).
  void uploadPixels(const StripView& strip, unsigned char* target, cudaStream_t stream) {
    const size_t bytes = static_cast<size_t>(strip.pixels) * strip.bands * sampleSize_;
    if (!strip.bandMajor) {
      check(cudaMemcpyAsync(target, strip.data, bytes, cudaMemcpyHostToDevice, stream), "upload");
      return;
    }
    if (bytes > staging_.size())
      throw DeviceError("internal: a band-major strip larger than the staging array");
    uploadBandMajor(strip.data, strip.pixels, strip.bands, sampleSize_, strip.pixels,
                    staging_.get(), target, stream);
  }

  // Marks the current slot reusable once the compute stream has used it.
  void releaseSlot() {
    if (!resident_)
      check(cudaEventRecord(*slotFree_[slot_], context_.computeStream()), "cudaEventRecord");
  }

  // Projects chunk by chunk in precision C, invalid pixels set to `invalid` and marked in valid_,
  // and calls consume(firstPixel, pixels, deviceValues) with components x pixels values per chunk.
  template <class T, class C, class Consume>
  void forEachProjectedChunk(const StripView& strip, const T* raw, const Projection& projection,
                             double invalid, double& seconds, Consume&& consume) {
    const int bands = strip.bands;
    const int components = projection.components;
    C* weights = reinterpret_cast<C*>(weights_.get());  // row-major bands x components
    const std::vector<C> hostWeights(projection.weights.begin(), projection.weights.end());
    check(cudaMemcpyAsync(weights, hostWeights.data(), hostWeights.size() * sizeof(C),
                          cudaMemcpyHostToDevice, context_.computeStream()),
          "upload");
    check(cudaMemcpyAsync(center_.get(), projection.center.data(), bands * sizeof(double),
                          cudaMemcpyHostToDevice, context_.computeStream()),
          "upload");
    learnNodata<T>(strip);
    const T* nodata = alwaysValid_ ? nullptr : reinterpret_cast<const T*>(nodataValue_.get());
    C* values = reinterpret_cast<C*>(result_.get());
    for (int64_t first = 0; first < strip.pixels; first += chunkPixels_) {
      const int64_t pixels = std::min(chunkPixels_, strip.pixels - first);
      const T* chunk = raw + first * bands;
      context_.timed(seconds, context_.computeStream(), [&] {
        cuda::project(chunk, pixels, bands, nodata, hasNodata_.get(), valid_.get(), center_.get(),
                      weights, components, invalid, values, context_.computeStream());
      });
      consume(first, pixels, values);
    }
  }

  GpuContext context_;
  DeviceTimes& times_ = context_.times();
  std::unique_ptr<Event> slotFree_[2];

  CubeLayout layout_;
  int sampleSize_ = 0;
  bool resident_ = false;
  int64_t chunkPixels_ = 0;
  // The exact int8-digit moments (addDigitMoments): pixels per chunk (0: not used), padded band
  // count, pixels per digit plane row, and where the planes start in the work array.
  int64_t digitPixels_ = 0;
  int paddedBands_ = 0;
  int64_t digitLd_ = 0;
  int64_t digitPlanesOffset_ = 0;
  int slot_ = 0;
  DeviceArray<unsigned char> cube_, slots_[2], staging_;
  DeviceArray<double> work_, result_, partials_, gram_, sum_, low_, high_, shift_, center_,
      weights_, restore_, offset_, scale_, nodataValue_;
  DeviceArray<unsigned char> encoded_, valid_, hasNodata_;
  DeviceArray<unsigned long long> count_;
  bool nodataKnown_ = false, alwaysValid_ = false;
  int64_t hostCounted_ = 0;
  std::vector<double> shiftHost_;
  // Resident pixels whose moments wait for a whole chunk (accumulate).
  int64_t pendingFirst_ = 0, pendingPixels_ = 0;
  StripView pendingStrip_;
  // MNF's noise moments (prepareNoise).
  struct Noise {
    bool on = false;
    int rowStep = 0, columnStep = 0;
    int64_t width = 0;
    DeviceArray<unsigned char> above;  // the row above the current segment
    bool hasAbove = false;
    DeviceArray<double> gram, sum, ones;
    DeviceArray<unsigned long long> count;
  } noise_;
};

}  // namespace

std::unique_ptr<PcaKernels> makeCudaPcaKernels(int device, int64_t memoryBytes,
                                               std::string description) {
  return std::make_unique<CudaPcaKernels>(device, memoryBytes, std::move(description));
}

}  // namespace hyperstream::cuda
