// SPP's kernels on a GPU: each strip with its halo rows is uploaded, its unit spectra, alpha and
// rho computed (sppAlpha stages a tile and its halo in shared memory), the pixels displaced, and
// the results downloaded.

#include "core/Samples.h"
#include "cuda/core/GpuContext.h"
#include "cuda/spp/CudaSppKernels.h"
#include "cuda/spp/SppDeviceKernels.h"

#include <cmath>
#include <memory>
#include <string>
#include <utility>

namespace hyperstream::cuda {

namespace {

class CudaSppKernels final : public SppKernels {
 public:
  CudaSppKernels(int device, int64_t memoryBytes, std::string description)
      : context_(device, memoryBytes, std::move(description)) {}
  // Outstanding work must end before the buffers it uses are freed.
  ~CudaSppKernels() override { context_.finishWork(); }

  std::string name() const override { return context_.description(); }
  HostMemory allocateHost(size_t bytes) override { return context_.allocateHost(bytes); }
  DeviceTimes deviceTimes() const override { return times_; }

  double spatialPreprocess(const SppStrip& strip, const SppOutput& output) override {
    context_.select();
    const int bands = strip.bands;
    const int64_t blockPixels = strip.blockRows * strip.width;
    const int64_t pixels = strip.rows * strip.width;
    const int outputSize = strip.outputType == OutputType::Float64 ? 8 : 4;
    grow(unit_, static_cast<size_t>(blockPixels) * bands);
    grow(valid_, blockPixels);
    grow(noise_, blockPixels);
    grow(cube_, static_cast<size_t>(pixels) * bands * outputSize);
    grow(alpha_, 2 * static_cast<size_t>(pixels));
    grow(centroid_, bands);
    check(cudaMemcpyAsync(centroid_.get(), strip.centroid, bands * sizeof(double),
                          cudaMemcpyHostToDevice, context_.computeStream()),
          "upload");
    withSampleType(strip.type, [&](auto sample) {
      using T = decltype(sample);
      const size_t bytes = static_cast<size_t>(blockPixels) * bands * sizeof(T);
      grow(raw_, bytes);
      grow(nodata_, bands * sizeof(T));
      grow(hasNodata_, bands);
      const ValidPixel<T> isValid(strip.nodata, bands);  // the CPU's rule, uploaded
      check(cudaMemcpyAsync(nodata_.get(), isValid.nodataValues().data(), bands * sizeof(T),
                            cudaMemcpyHostToDevice, context_.computeStream()),
            "upload");
      check(cudaMemcpyAsync(hasNodata_.get(), isValid.hasNodata().data(), bands,
                            cudaMemcpyHostToDevice, context_.computeStream()),
            "upload");
      context_.timed(times_.upload, context_.computeStream(), [&] {
        check(cudaMemcpyAsync(raw_.get(), strip.data, bytes, cudaMemcpyHostToDevice,
                              context_.computeStream()),
              "upload");
      });
      times_.uploadBytes += static_cast<int64_t>(bytes);
      const T* raw = reinterpret_cast<const T*>(raw_.get());
      float* alpha = alpha_.get();
      float* rho = alpha + pixels;
      context_.timed(times_.spp, context_.computeStream(), [&] {
        sppUnitSpectra(raw, blockPixels, bands, reinterpret_cast<const T*>(nodata_.get()),
                       hasNodata_.get(), strip.noiseVariance, unit_.get(), valid_.get(),
                       noise_.get(), context_.computeStream());
        sppAlpha(unit_.get(), valid_.get(), noise_.get(), strip.width, strip.height,
                 strip.blockRow0, strip.blockRows, strip.row0, strip.rows, bands, strip.halo,
                 strip.mirror, alpha, rho, context_.computeStream());
        const int64_t skip = (strip.row0 - strip.blockRow0) * strip.width;
        if (strip.outputType == OutputType::Float64)
          sppDisplace(raw + skip * bands, valid_.get() + skip, rho, pixels, bands, centroid_.get(),
                      strip.outputNodata, reinterpret_cast<double*>(cube_.get()),
                      context_.computeStream());
        else
          sppDisplace(raw + skip * bands, valid_.get() + skip, rho, pixels, bands, centroid_.get(),
                      strip.outputNodata, reinterpret_cast<float*>(cube_.get()),
                      context_.computeStream());
      });
      const size_t cubeBytes = static_cast<size_t>(pixels) * bands * outputSize;
      context_.timed(times_.download, context_.computeStream(), [&] {
        check(cudaMemcpyAsync(output.cube, cube_.get(), cubeBytes, cudaMemcpyDeviceToHost,
                              context_.computeStream()),
              "download");
        check(cudaMemcpyAsync(output.alpha, alpha, pixels * sizeof(float), cudaMemcpyDeviceToHost,
                              context_.computeStream()),
              "download");
        check(cudaMemcpyAsync(output.rho, rho, pixels * sizeof(float), cudaMemcpyDeviceToHost,
                              context_.computeStream()),
              "download");
      });
      times_.downloadBytes += static_cast<int64_t>(cubeBytes + 2 * pixels * sizeof(float));
    });
    context_.synchronize();
    double sum = 0;  // in pixel order, over valid pixels (NaN marks the others)
    for (int64_t i = 0; i < pixels; ++i)
      if (!std::isnan(output.alpha[i])) sum += output.alpha[i];
    return sum;
  }

 private:
  GpuContext context_;
  DeviceTimes& times_ = context_.times();
  // Grown to the largest strip.
  DeviceArray<unsigned char> raw_, nodata_, hasNodata_, valid_, cube_;
  DeviceArray<float> unit_, noise_, alpha_;
  DeviceArray<double> centroid_;
};

}  // namespace

std::unique_ptr<SppKernels> makeCudaSppKernels(int device, int64_t memoryBytes,
                                               std::string description) {
  return std::make_unique<CudaSppKernels>(device, memoryBytes, std::move(description));
}

}  // namespace hyperstream::cuda
