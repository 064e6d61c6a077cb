#pragma once
// RAII owners for CUDA and cuBLAS resources, and status checks that throw DeviceError.

#include "core/Error.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

namespace hyperstream::cuda {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw DeviceError(std::string(what) + ": " + cudaGetErrorString(status));
}

inline void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(std::string(what) + ": " + cublasGetStatusString(status));
}

// An array in device memory.
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t count) : count_(count) {
    if (count > 0)
      check(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)), "cudaMalloc");
  }
  DeviceArray(DeviceArray&& other) noexcept { swap(other); }
  DeviceArray& operator=(DeviceArray&& other) noexcept {
    DeviceArray(std::move(other)).swap(*this);
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() {
    if (data_) cudaFree(data_);
  }
  T* get() const { return data_; }
  size_t size() const { return count_; }

 private:
  void swap(DeviceArray& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
  }
  T* data_ = nullptr;
  size_t count_ = 0;
};

class Stream {
 public:
  Stream() {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  explicit Event(unsigned flags = cudaEventDefault) {
    check(cudaEventCreateWithFlags(&event_, flags), "cudaEventCreate");
  }
  ~Event() { cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  operator cudaEvent_t() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

class BlasHandle {
 public:
  explicit BlasHandle(cudaStream_t stream) {
    check(cublasCreate(&handle_), "cublasCreate");
    cublasSetStream(handle_, stream);
    cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_HOST);
  }
  ~BlasHandle() { cublasDestroy(handle_); }
  BlasHandle(const BlasHandle&) = delete;
  BlasHandle& operator=(const BlasHandle&) = delete;
  operator cublasHandle_t() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace hyperstream::cuda
