// The CUDA backend: strips cross the bus in the file's own type into page-locked host buffers
// and two device slots (or straight into a device copy of the whole cube when it fits), are
// converted and centred on the GPU, and go through cuBLAS GEMMs (the moments' Gram matrix exactly
// in int8 digits on the tensor cores for 8/16-bit integers, else in float64; the projection in
// float32 or float64). Uploads run on their own stream, so copying strip
// i+1 overlaps computing strip i while the engine's reader thread reads strip i+2.

#include "CudaResources.h"
#include "Kernels.h"
#include "core/Samples.h"
#include "run/ComputeBackend.h"
#include "run/GpuRuntime.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace hyperstream::cuda {

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
// Pixels per kernel/GEMM chunk at most: the float64 copy of a chunk stays under this size
// (cuBLAS DGEMM ran the Gram of 198 bands faster in chunks of 165 000 pixels than of 1.35 M).
constexpr int64_t kChunkBytes = 256 * kMiB;

// Faults the pages of new memory in from several threads before cudaHostRegister pins them: the
// kernel zeroes each page at its first touch, which for a 64 MiB buffer takes one thread 10 ms.
void touchPages(unsigned char* memory, size_t size) {
  constexpr size_t kPage = 4096, kMinimumShare = size_t{8} << 20;
  const size_t threadCount = std::clamp<size_t>(size / kMinimumShare, 1, 8);
  const size_t share = (size / threadCount + kPage - 1) / kPage * kPage;
  std::vector<std::thread> threads;
  for (size_t first = 0; first < size; first += share)
    threads.emplace_back([=] {
      for (size_t at = first; at < std::min(size, first + share); at += kPage) memory[at] = 0;
    });
  for (std::thread& thread : threads) thread.join();
}

std::string version(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

class CudaBackend final : public ComputeBackend {
 public:
  CudaBackend(int device, int64_t memoryBytes, std::string description)
      : device_(device), memoryBytes_(memoryBytes), description_(std::move(description)) {
    select();
    copy_ = std::make_unique<Stream>();
    compute_ = std::make_unique<Stream>();
    blas_ = std::make_unique<BlasHandle>(*compute_);
    // Host waits block rather than spin: a spinning thread takes a core from the reader's.
    uploaded_ = std::make_unique<Event>(cudaEventBlockingSync | cudaEventDisableTiming);
    streamDone_ = std::make_unique<Event>(cudaEventBlockingSync | cudaEventDisableTiming);
    for (auto& slot : slotFree_) slot = std::make_unique<Event>();
  }

  ~CudaBackend() override {
    // Outstanding work must end before the buffers it uses are freed.
    cudaSetDevice(device_);
    if (copy_) cudaStreamSynchronize(*copy_);
    if (compute_) cudaStreamSynchronize(*compute_);
  }

  std::string name() const override { return description_; }

  bool prepare(const CubeLayout& layout) override {
    select();
    withSampleType(layout.type, [](auto) {});  // rejects unsupported types
    layout_ = layout;
    sampleSize_ = GDALGetDataTypeSizeBytes(layout.type);
    const int bands = layout.bands;
    const int components = std::max(1, layout.maxComponents);
    const int rows = std::max(bands, components);
    const int64_t stripBytes = layout.maxStripPixels * bands * sampleSize_;
    const int64_t cubeBytes = layout.pixels * bands * sampleSize_;
    auto workBytes = [&](int64_t pixels) {
      return pixels * (bands * int64_t{8} + components * int64_t{9} + 1) +
             3 * int64_t{reductionBlocks(pixels)} * rows * 8;
    };
    const int64_t fixedBytes = int64_t{bands} * bands * 8 + int64_t{bands} * components * 8 +
                               int64_t{rows} * 64 + 8 * kMiB;
    const int64_t longestChunk = std::max<int64_t>(1024, kChunkBytes / (int64_t{bands} * 8));
    chunkPixels_ = std::min(layout.pixels, longestChunk);
    const int64_t budget = budgetBytes();
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
    work_ = DeviceArray<double>(static_cast<size_t>(chunkPixels_) * bands);
    // Projections go strip by strip: their results need no longer chunks than strips.
    const size_t projected = static_cast<size_t>(std::min(chunkPixels_, layout.maxStripPixels));
    result_ = DeviceArray<double>(projected * components);
    bytes_ = DeviceArray<unsigned char>(projected * components);
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
    scale_ = DeviceArray<double>(2 * static_cast<size_t>(components));
    nodataValue_ = DeviceArray<double>(bands);
    hasNodata_ = DeviceArray<unsigned char>(bands);
    count_ = DeviceArray<unsigned long long>(1);
    nodataKnown_ = false;
    resetMoments();
    times_ = DeviceTimes{};
    return resident_;
  }

  // Page-locked strip buffers. Locking memory the kernel backs with 2 MiB pages is faster than
  // cudaHostAlloc's 4 KiB ones (bench_gpu_startup); buffers under a page, where the kernel gives
  // none, or where registering fails: cudaHostAlloc, then pageable memory (which copies slower).
  HostMemory allocateHost(size_t bytes) override {
    constexpr size_t kHugePage = size_t{2} << 20;
    const size_t size = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    void* memory = nullptr;
    if (bytes >= kHugePage && posix_memalign(&memory, kHugePage, size) == 0) {
      madvise(memory, size, MADV_HUGEPAGE);  // a hint: without it the pages are small
      touchPages(static_cast<unsigned char*>(memory), size);
      if (cudaHostRegister(memory, size, cudaHostRegisterPortable) == cudaSuccess)
        return HostMemory(static_cast<unsigned char*>(memory), [](unsigned char* p) {
          cudaHostUnregister(p);
          std::free(p);
        });
      cudaGetLastError();  // not sticky
      std::free(memory);
    }
    if (cudaHostAlloc(&memory, bytes, cudaHostAllocPortable) != cudaSuccess) {
      cudaGetLastError();
      return allocatePageable(bytes);
    }
    return HostMemory(static_cast<unsigned char*>(memory),
                      [](unsigned char* p) { cudaFreeHost(p); });
  }

  void accumulateMoments(const StripView& strip) override {
    select();
    withSampleType(strip.type, [&](auto sample) { accumulate<decltype(sample)>(strip); });
  }

  Moments takeMoments(int bands) override {
    select();
    withSampleType(layout_.type, [&](auto sample) { addPendingMoments<decltype(sample)>(); });
    synchronize();
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
    if (result.count > 0) {
      // Sum (x-s)(x-s)^T = M + n (m-s)(m-s)^T; one triangle, mirrored (exactly symmetric).
      const double n = static_cast<double>(result.count);
      for (int b = 0; b < bands; ++b) result.mean[b] = shiftHost_[b] + sum[b] / n;
      for (int j = 0; j < bands; ++j)
        for (int i = 0; i <= j; ++i) {
          const double value = gram[static_cast<size_t>(j) * bands + i] - sum[i] * sum[j] / n;
          result.comoment[static_cast<size_t>(i) * bands + j] = value;
          result.comoment[static_cast<size_t>(j) * bands + i] = value;
        }
    }
    resetMoments();
    return result;
  }

  ComponentRange componentRange(const StripView& strip, const Projection& projection) override {
    select();
    const int components = projection.components;
    resetRanges(components);  // the band ranges of pass 1 were taken already
    withSampleType(strip.type, [&](auto sample) {
      using T = decltype(sample);
      const T* raw = stripOnDevice<T>(strip);
      forEachProjectedChunk<T, float>(
          strip, raw, projection, 0.0, times_.range,
          [&](int64_t, int64_t pixels, const float* values) {
            timed(times_.range, *compute_, [&] {
              rangePartials(values, pixels, components, valid_.get(), partials_.get(), *compute_);
              mergePartials(partials_.get(), reductionBlocks(pixels), components, nullptr,
                            low_.get(), high_.get(), *compute_);
            });
          });
      releaseSlot();
    });
    ComponentRange range;
    range.minimum.resize(components);
    range.maximum.resize(components);
    downloadAsync(range.minimum.data(), low_.get(), components);
    downloadAsync(range.maximum.data(), high_.get(), components);
    synchronize();
    return range;
  }

  void project(const StripView& strip, const Projection& projection, const OutputEncoding& encoding,
               void* output) override {
    select();
    const int components = projection.components;
    if (encoding.type == GDT_Byte) {
      std::vector<double> scale(encoding.byteMinimum);
      scale.insert(scale.end(), encoding.byteScale.begin(), encoding.byteScale.end());
      check(cudaMemcpyAsync(scale_.get(), scale.data(), scale.size() * sizeof(double),
                            cudaMemcpyHostToDevice, *compute_),
            "upload");
    }
    auto* out = static_cast<unsigned char*>(output);
    withSampleType(strip.type, [&](auto sample) {
      using T = decltype(sample);
      const T* raw = stripOnDevice<T>(strip);
      auto emit = [&](auto* values, int64_t first, int64_t pixels, size_t size) {
        const size_t bytes = static_cast<size_t>(pixels) * components * size;
        timed(times_.download, *compute_, [&] {
          check(cudaMemcpyAsync(out + first * components * size, values, bytes,
                                cudaMemcpyDeviceToHost, *compute_),
                "download");
        });
        times_.downloadBytes += static_cast<int64_t>(bytes);
      };
      // Float outputs are the projection itself, nodata in place.
      auto projectFloat = [&](auto precision) {
        using C = decltype(precision);
        forEachProjectedChunk<T, C>(strip, raw, projection, encoding.nodata, times_.projection,
                                    [&](int64_t first, int64_t pixels, C* values) {
                                      emit(values, first, pixels, sizeof(C));
                                    });
      };
      if (encoding.type == GDT_Float64) {
        projectFloat(double{});
      } else if (encoding.type == GDT_Float32) {
        projectFloat(float{});
      } else if (encoding.type == GDT_Byte) {
        forEachProjectedChunk<T, float>(
            strip, raw, projection, 0.0, times_.projection,
            [&](int64_t first, int64_t pixels, float* values) {
              timed(times_.projection, *compute_, [&] {
                encodeByte(values, pixels, components, valid_.get(), scale_.get(),
                           scale_.get() + components, encoding.byteLow,
                           static_cast<unsigned char>(encoding.nodata), bytes_.get(), *compute_);
              });
              emit(bytes_.get(), first, pixels, 1);
            });
      } else {
        throw Error("OUTPUT_TYPE", "output type must be Float32, Float64 or Byte");
      }
      releaseSlot();
    });
    synchronize();
  }

  double spatialPreprocess(const SppStrip& strip, const SppOutput& output) override {
    select();
    const int bands = strip.bands;
    const int64_t blockPixels = strip.blockRows * strip.width;
    const int64_t pixels = strip.rows * strip.width;
    const int outputSize = strip.outputType == GDT_Float64 ? 8 : 4;
    grow(sppUnit_, static_cast<size_t>(blockPixels) * bands);
    grow(sppValid_, blockPixels);
    grow(sppCube_, static_cast<size_t>(pixels) * bands * outputSize);
    grow(sppAlpha_, 2 * static_cast<size_t>(pixels));
    grow(sppCentroid_, bands);
    check(cudaMemcpyAsync(sppCentroid_.get(), strip.centroid, bands * sizeof(double),
                          cudaMemcpyHostToDevice, *compute_),
          "upload");
    withSampleType(strip.type, [&](auto sample) {
      using T = decltype(sample);
      const size_t bytes = static_cast<size_t>(blockPixels) * bands * sizeof(T);
      grow(sppRaw_, bytes);
      grow(sppNodata_, bands * sizeof(T));
      grow(sppHasNodata_, bands);
      const ValidPixel<T> isValid(strip.nodata, bands);  // the CPU's rule, uploaded
      check(cudaMemcpyAsync(sppNodata_.get(), isValid.nodataValues().data(), bands * sizeof(T),
                            cudaMemcpyHostToDevice, *compute_),
            "upload");
      check(cudaMemcpyAsync(sppHasNodata_.get(), isValid.hasNodata().data(), bands,
                            cudaMemcpyHostToDevice, *compute_),
            "upload");
      timed(times_.upload, *compute_, [&] {
        check(cudaMemcpyAsync(sppRaw_.get(), strip.data, bytes, cudaMemcpyHostToDevice, *compute_),
              "upload");
      });
      times_.uploadBytes += static_cast<int64_t>(bytes);
      const T* raw = reinterpret_cast<const T*>(sppRaw_.get());
      float* alpha = sppAlpha_.get();
      float* rho = alpha + pixels;
      timed(times_.spp, *compute_, [&] {
        sppUnitSpectra(raw, blockPixels, bands, reinterpret_cast<const T*>(sppNodata_.get()),
                       sppHasNodata_.get(), sppUnit_.get(), sppValid_.get(), *compute_);
        sppAlpha(sppUnit_.get(), sppValid_.get(), strip.width, strip.height, strip.blockRow0,
                 strip.blockRows, strip.row0, strip.rows, bands, strip.halo, strip.mirror, alpha,
                 rho, *compute_);
        const int64_t skip = (strip.row0 - strip.blockRow0) * strip.width;
        if (strip.outputType == GDT_Float64)
          sppDisplace(raw + skip * bands, sppValid_.get() + skip, rho, pixels, bands,
                      sppCentroid_.get(), strip.outputNodata,
                      reinterpret_cast<double*>(sppCube_.get()), *compute_);
        else
          sppDisplace(raw + skip * bands, sppValid_.get() + skip, rho, pixels, bands,
                      sppCentroid_.get(), strip.outputNodata,
                      reinterpret_cast<float*>(sppCube_.get()), *compute_);
      });
      const size_t cubeBytes = static_cast<size_t>(pixels) * bands * outputSize;
      timed(times_.download, *compute_, [&] {
        check(cudaMemcpyAsync(output.cube, sppCube_.get(), cubeBytes, cudaMemcpyDeviceToHost,
                              *compute_),
              "download");
        check(cudaMemcpyAsync(output.alpha, alpha, pixels * sizeof(float), cudaMemcpyDeviceToHost,
                              *compute_),
              "download");
        check(cudaMemcpyAsync(output.rho, rho, pixels * sizeof(float), cudaMemcpyDeviceToHost,
                              *compute_),
              "download");
      });
      times_.downloadBytes += static_cast<int64_t>(cubeBytes + 2 * pixels * sizeof(float));
    });
    synchronize();
    double sum = 0;  // in pixel order, over valid pixels (NaN marks the others)
    for (int64_t i = 0; i < pixels; ++i)
      if (!std::isnan(output.alpha[i])) sum += output.alpha[i];
    return sum;
  }

  DeviceTimes deviceTimes() const override { return times_; }

 private:
  void select() const { check(cudaSetDevice(device_), "cudaSetDevice"); }

  int64_t budgetBytes() const {
    if (memoryBytes_ > 0) return memoryBytes_;
    size_t freeBytes = 0, totalBytes = 0;
    check(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo");
    // Leave room for cuBLAS's workspace, other programs and the display.
    const int64_t margin = std::max<int64_t>(512 * kMiB, static_cast<int64_t>(totalBytes) / 20);
    return static_cast<int64_t>(freeBytes) - margin;
  }

  void resetMoments() {
    const int bands = layout_.bands;
    check(cudaMemsetAsync(gram_.get(), 0, gram_.size() * sizeof(double), *compute_), "memset");
    check(cudaMemsetAsync(sum_.get(), 0, bands * sizeof(double), *compute_), "memset");
    check(cudaMemsetAsync(count_.get(), 0, sizeof(unsigned long long), *compute_), "memset");
    resetRanges(bands);
    hostCounted_ = 0;
    shiftHost_.clear();
    pendingPixels_ = 0;
    synchronize();
  }

  void resetRanges(int rows) {
    const std::vector<double> infinite(rows, std::numeric_limits<double>::infinity());
    const std::vector<double> negative(rows, -std::numeric_limits<double>::infinity());
    check(cudaMemcpyAsync(low_.get(), infinite.data(), rows * sizeof(double),
                          cudaMemcpyHostToDevice, *compute_),
          "upload");
    check(cudaMemcpyAsync(high_.get(), negative.data(), rows * sizeof(double),
                          cudaMemcpyHostToDevice, *compute_),
          "upload");
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
      int64_t p = 0;
      while (p < strip.pixels && !isValid(data + p * bands)) ++p;
      if (p < strip.pixels) {
        shiftHost_.assign(bands, 0.0);
        for (int b = 0; b < bands; ++b) shiftHost_[b] = static_cast<double>(data[p * bands + b]);
        check(cudaMemcpyAsync(shift_.get(), shiftHost_.data(), bands * sizeof(double),
                              cudaMemcpyHostToDevice, *compute_),
              "upload");
      }
    }
    if (shiftHost_.empty()) {  // no valid pixel yet: nothing to add
      releaseSlot();
      return;
    }
    if (!resident_) {
      addMoments(raw, strip.pixels, strip);
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
      addMoments(residentPixels<T>(pendingFirst_), whole, pendingStrip_);
      pendingFirst_ += whole;
      pendingPixels_ -= whole;
    }
  }

  // The moments of the resident pixels not yet added.
  template <class T>
  void addPendingMoments() {
    if (pendingPixels_ == 0) return;
    addMoments(residentPixels<T>(pendingFirst_), pendingPixels_, pendingStrip_);
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

  // Adds `pixels` pixels at device pointer `raw` to the running moments, chunk by chunk.
  template <class T>
  void addMoments(const T* raw, int64_t pixelCount, const StripView& strip) {
    if constexpr (std::is_integral_v<T> && sizeof(T) <= 2) {
      if (digitPixels_ > 0) {
        addDigitMoments(raw, pixelCount, strip);
        return;
      }
    }
    const int bands = strip.bands;
    timed(times_.moments, *compute_, [&] {
      for (int64_t first = 0; first < pixelCount; first += chunkPixels_) {
        const int64_t pixels = std::min(chunkPixels_, pixelCount - first);
        const T* chunk = raw + first * bands;
        markValidPixels(strip, chunk, pixels);
        double* x = work_.get();
        centre(chunk, pixels, bands, valid_.get(), shift_.get(), x, partials_.get(), *compute_);
        mergePartials(partials_.get(), reductionBlocks(pixels), bands, sum_.get(), low_.get(),
                      high_.get(), *compute_);
        // GEMM rather than SYRK: on the H100 cuBLAS's DGEMM does this shape 2.4x faster than
        // its DSYRK although it computes both triangles (bench_gpu).
        const double one = 1.0;
        check(cublasDgemm(*blas_, CUBLAS_OP_N, CUBLAS_OP_T, bands, bands, static_cast<int>(pixels),
                          &one, x, bands, x, bands, &one, gram_.get(), bands),
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
    timed(times_.moments, *compute_, [&] {
      for (int64_t first = 0; first < pixelCount; first += digitPixels_) {
        const int64_t pixels = std::min(digitPixels_, pixelCount - first);
        const T* chunk = raw + first * bands;
        markValidPixels(strip, chunk, pixels);
        bandStatistics(chunk, pixels, bands, valid_.get(), shift_.get(), partials_.get(),
                       *compute_);
        mergePartials(partials_.get(), reductionBlocks(pixels), bands, sum_.get(), low_.get(),
                      high_.get(), *compute_);
        // The GEMM runs over this chunk's pixels only (padded to 16), not the longest chunk's.
        const int64_t depth = (pixels + 15) / 16 * 16;
        splitDigits(chunk, pixels, bands, valid_.get(), shift_.get(), digitLd_, depth, paddedBands_,
                    planes, *compute_);
        const int32_t one = 1, zero = 0;
        check(cublasGemmEx(*blas_, CUBLAS_OP_T, CUBLAS_OP_N, stacked, stacked,
                           static_cast<int>(depth), &one, planes, CUDA_R_8I,
                           static_cast<int>(digitLd_), planes, CUDA_R_8I,
                           static_cast<int>(digitLd_), &zero, products, CUDA_R_32I, stacked,
                           CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx (int8)");
        combineDigits(products, bands, paddedBands_, gram_.get(), *compute_);
      }
    });
  }

  // Sizes the digit path into the work array, and checks that cuBLAS runs int8 GEMMs here;
  // digitPixels_ stays 0 (the float64 path) for other types or when either fails.
  void planDigits() {
    digitPixels_ = 0;
    if (layout_.type != GDT_Byte && layout_.type != GDT_Int16 && layout_.type != GDT_UInt16) return;
    constexpr int64_t kMaxDigitPixels = int64_t{1} << 18;
    paddedBands_ = (layout_.bands + 3) / 4 * 4;
    const int64_t pixels = std::min(chunkPixels_, kMaxDigitPixels);
    digitLd_ = (pixels + 15) / 16 * 16;
    const int64_t productBytes = 9 * int64_t{paddedBands_} * paddedBands_ * 4;
    digitPlanesOffset_ = (productBytes + 255) / 256 * 256;
    const int64_t needed = digitPlanesOffset_ + 3 * int64_t{paddedBands_} * digitLd_;
    if (needed > static_cast<int64_t>(work_.size() * sizeof(double))) return;
    // One small int8 GEMM on the (zeroed) work array: some GPUs or cuBLAS builds refuse them.
    check(cudaMemsetAsync(work_.get(), 0, needed, *compute_), "memset");
    const int32_t one = 1, zero = 0;
    const auto* planes = reinterpret_cast<const int8_t*>(work_.get()) + digitPlanesOffset_;
    const cublasStatus_t status = cublasGemmEx(
        *blas_, CUBLAS_OP_T, CUBLAS_OP_N, 4, 4, 16, &one, planes, CUDA_R_8I, 16, planes, CUDA_R_8I,
        16, &zero, work_.get(), CUDA_R_32I, 4, CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT);
    synchronize();
    if (status == CUBLAS_STATUS_SUCCESS) digitPixels_ = pixels;
  }

  // valid_ for `pixels` pixels of the strip starting at device pointer `chunk`, the valid ones
  // added to the moments' count.
  template <class T>
  void markValidPixels(const StripView& strip, const T* chunk, int64_t pixels) {
    learnNodata<T>(strip);
    if (alwaysValid_) {
      check(cudaMemsetAsync(valid_.get(), 1, pixels, *compute_), "memset");
      hostCounted_ += pixels;
      return;
    }
    markValid(chunk, pixels, strip.bands, reinterpret_cast<const T*>(nodataValue_.get()),
              hasNodata_.get(), valid_.get(), count_.get(), *compute_);
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
      check(cudaStreamWaitEvent(*copy_, *slotFree_[slot_], 0), "cudaStreamWaitEvent");
    }
    timed(times_.upload, *copy_, [&] {
      check(cudaMemcpyAsync(target, strip.data, bytes, cudaMemcpyHostToDevice, *copy_), "upload");
    });
    times_.uploadBytes += static_cast<int64_t>(bytes);
    check(cudaEventRecord(*uploaded_, *copy_), "cudaEventRecord");
    check(cudaStreamWaitEvent(*compute_, *uploaded_, 0), "cudaStreamWaitEvent");
    check(cudaEventSynchronize(*uploaded_), "upload");
    return reinterpret_cast<const T*>(target);
  }

  // Marks the current slot reusable once the compute stream has used it.
  void releaseSlot() {
    if (!resident_) check(cudaEventRecord(*slotFree_[slot_], *compute_), "cudaEventRecord");
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
                          cudaMemcpyHostToDevice, *compute_),
          "upload");
    check(cudaMemcpyAsync(center_.get(), projection.center.data(), bands * sizeof(double),
                          cudaMemcpyHostToDevice, *compute_),
          "upload");
    learnNodata<T>(strip);
    const T* nodata = alwaysValid_ ? nullptr : reinterpret_cast<const T*>(nodataValue_.get());
    C* values = reinterpret_cast<C*>(result_.get());
    for (int64_t first = 0; first < strip.pixels; first += chunkPixels_) {
      const int64_t pixels = std::min(chunkPixels_, strip.pixels - first);
      const T* chunk = raw + first * bands;
      timed(seconds, *compute_, [&] {
        cuda::project(chunk, pixels, bands, nodata, hasNodata_.get(), valid_.get(), center_.get(),
                      weights, components, invalid, values, *compute_);
      });
      consume(first, pixels, values);
    }
  }

  template <class F>
  void timed(double& total, cudaStream_t stream, F&& work) {
    Span span{std::make_unique<Event>(), std::make_unique<Event>(), &total};
    check(cudaEventRecord(*span.start, stream), "cudaEventRecord");
    work();
    check(cudaEventRecord(*span.stop, stream), "cudaEventRecord");
    spans_.push_back(std::move(span));
  }

  // Waits for both streams and adds up the timed spans.
  void synchronize() {
    for (cudaStream_t stream : {cudaStream_t{*copy_}, cudaStream_t{*compute_}}) {
      check(cudaEventRecord(*streamDone_, stream), "cudaEventRecord");
      check(cudaEventSynchronize(*streamDone_), "stream");
    }
    for (const Span& span : spans_) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, *span.start, *span.stop), "cudaEventElapsedTime");
      *span.total += ms * 1e-3;
    }
    spans_.clear();
  }

  // Reallocates `array` when it holds fewer than `count` elements.
  template <class T>
  void grow(DeviceArray<T>& array, size_t count) {
    if (array.size() < count) {
      array = DeviceArray<T>();  // free first: the new one may need the room
      array = DeviceArray<T>(count);
    }
  }

  template <class T>
  void download(T* host, const T* device, size_t count) {
    check(cudaMemcpy(host, device, count * sizeof(T), cudaMemcpyDeviceToHost), "download");
  }
  template <class T>
  void downloadAsync(T* host, const T* device, size_t count) {
    check(cudaMemcpyAsync(host, device, count * sizeof(T), cudaMemcpyDeviceToHost, *compute_),
          "download");
  }

  struct Span {
    std::unique_ptr<Event> start, stop;
    double* total;
  };

  int device_;
  int64_t memoryBytes_;
  std::string description_;
  std::unique_ptr<Stream> copy_, compute_;
  std::unique_ptr<BlasHandle> blas_;
  std::unique_ptr<Event> uploaded_, streamDone_;
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
  DeviceArray<unsigned char> cube_, slots_[2];
  DeviceArray<double> work_, result_, partials_, gram_, sum_, low_, high_, shift_, center_,
      weights_, scale_, nodataValue_;
  DeviceArray<unsigned char> bytes_, valid_, hasNodata_;
  DeviceArray<unsigned long long> count_;
  // Spatial preprocessing, grown to the largest strip.
  DeviceArray<unsigned char> sppRaw_, sppNodata_, sppHasNodata_, sppValid_, sppCube_;
  DeviceArray<float> sppUnit_, sppAlpha_;
  DeviceArray<double> sppCentroid_;
  bool nodataKnown_ = false, alwaysValid_ = false;
  int64_t hostCounted_ = 0;
  std::vector<double> shiftHost_;
  // Resident pixels whose moments wait for a whole chunk (accumulate).
  int64_t pendingFirst_ = 0, pendingPixels_ = 0;
  StripView pendingStrip_;
  std::vector<Span> spans_;
  DeviceTimes times_;
};

// Throws unless an NVIDIA driver new enough for this build's runtime is there.
void requireDriver() {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  if (driver == 0) throw DeviceError("no NVIDIA driver (libcuda.so.1) on this machine");
  if (driver < runtime)
    throw DeviceError("the NVIDIA driver supports CUDA " + version(driver) + ", this build needs " +
                      version(runtime) + " or newer");
}

class CudaRuntime final : public GpuRuntime {
 public:
  std::string versions() const override {
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    return (driver > 0 ? "CUDA driver " + version(driver) : std::string("no CUDA driver")) +
           ", runtime " + version(runtime);
  }

  int deviceCount() const override {
    requireDriver();
    int count = 0;
    check(cudaGetDeviceCount(&count), "no usable CUDA device");
    return count;
  }

  std::vector<GpuDevice> devices() const override {
    const int count = deviceCount();
    std::vector<GpuDevice> result;
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp properties{};
      check(cudaGetDeviceProperties(&properties, i), "cudaGetDeviceProperties");
      GpuDevice device;
      device.index = i;
      device.name = properties.name;
      device.totalBytes = static_cast<int64_t>(properties.totalGlobalMem);
      device.major = properties.major;
      device.minor = properties.minor;
      size_t freeBytes = 0, totalBytes = 0;
      check(cudaSetDevice(i), "cudaSetDevice");
      check(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo");
      device.freeBytes = static_cast<int64_t>(freeBytes);
      result.push_back(device);
    }
    return result;
  }

  std::unique_ptr<ComputeBackend> createBackend(const GpuBackendOptions& options) override {
    const int count = deviceCount();
    if (count == 0) throw DeviceError("no CUDA device");
    if (options.device < 0 || options.device >= count)
      throw DeviceError("there is no GPU " + std::to_string(options.device) + " (" +
                        std::to_string(count) + " found)");
    cudaDeviceProp properties{};
    check(cudaGetDeviceProperties(&properties, options.device), "cudaGetDeviceProperties");
    // The library holds code for compute capability 8.0 and 9.0 (and PTX for newer GPUs).
    if (properties.major < 8)
      throw DeviceError(std::string(properties.name) + " has compute capability " +
                        std::to_string(properties.major) + "." + std::to_string(properties.minor) +
                        "; this build needs 8.0 or newer");
    return std::make_unique<CudaBackend>(options.device, options.memoryBytes,
                                         "gpu " + std::to_string(options.device) + " (" +
                                             properties.name + ", cuBLAS, " + versions() + ")");
  }
};

}  // namespace

}  // namespace hyperstream::cuda

extern "C" __attribute__((visibility("default"))) hyperstream::GpuRuntime*
hyperstream_gpu_runtime() {
  static hyperstream::cuda::CudaRuntime runtime;
  return &runtime;
}
