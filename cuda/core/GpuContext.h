#pragma once
// One GPU's resources for a job's kernels: the device, a copy stream and a compute stream (so
// that uploading strip i+1 overlaps computing strip i), a cuBLAS handle on the compute stream,
// page-locked host buffers, and the device's own timing of its work. Each algorithm's kernels
// (pca/, spp/) own one.

#include "cuda/core/CudaResources.h"
#include "run/Kernels.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hyperstream::cuda {

constexpr int64_t kMiB = int64_t{1} << 20;

class GpuContext {
 public:
  GpuContext(int device, int64_t memoryBytes, std::string description);
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  const std::string& description() const { return description_; }
  // Makes this GPU the calling thread's current one (every entry point calls it first).
  void select() const;
  // Device memory the kernels may use: the budget given, or the free memory less a margin.
  int64_t budgetBytes() const;
  HostMemory allocateHost(size_t bytes);

  cudaStream_t copyStream() const { return *copy_; }
  cudaStream_t computeStream() const { return *compute_; }
  cublasHandle_t blas() const { return *blas_; }

  // Runs `work` (launches on `stream`) between two events; synchronize() adds the time between
  // them to `total`.
  template <class F>
  void timed(double& total, cudaStream_t stream, F&& work) {
    Span span{std::make_unique<Event>(), std::make_unique<Event>(), &total};
    check(cudaEventRecord(*span.start, stream), "cudaEventRecord");
    work();
    check(cudaEventRecord(*span.stop, stream), "cudaEventRecord");
    spans_.push_back(std::move(span));
  }
  // Waits for both streams and adds up the timed spans.
  void synchronize();
  // Waits for both streams, ignoring errors: before the kernels' buffers are freed.
  void finishWork() const;
  // The compute stream waits for what the copy stream did so far; returns once the copy is done.
  void computeAfterCopy();
  DeviceTimes& times() { return times_; }

 private:
  struct Span {
    std::unique_ptr<Event> start, stop;
    double* total;
  };
  int device_;
  int64_t memoryBytes_;
  std::string description_;
  std::unique_ptr<Stream> copy_, compute_;
  std::unique_ptr<BlasHandle> blas_;
  // Host waits block rather than spin: a spinning thread takes a core from the reader's.
  std::unique_ptr<Event> uploaded_, streamDone_;
  std::vector<Span> spans_;
  DeviceTimes times_;
};

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
void downloadAsync(T* host, const T* device, size_t count, cudaStream_t stream) {
  check(cudaMemcpyAsync(host, device, count * sizeof(T), cudaMemcpyDeviceToHost, stream),
        "download");
}
template <class T>
void uploadAsync(T* device, const T* host, size_t count, cudaStream_t stream) {
  check(cudaMemcpyAsync(device, host, count * sizeof(T), cudaMemcpyHostToDevice, stream), "upload");
}

}  // namespace hyperstream::cuda
