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

// A CUDA or cuBLAS handle, released by `release` when its owner goes; not copyable.
template <class Handle, auto release>
class OwnedHandle {
 public:
  OwnedHandle() = default;
  ~OwnedHandle() {
    if (handle_) release(handle_);
  }
  OwnedHandle(const OwnedHandle&) = delete;
  OwnedHandle& operator=(const OwnedHandle&) = delete;
  operator Handle() const { return handle_; }

 protected:
  Handle handle_ = nullptr;
};

class Stream : public OwnedHandle<cudaStream_t, cudaStreamDestroy> {
 public:
  Stream() {
    check(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
};

class Event : public OwnedHandle<cudaEvent_t, cudaEventDestroy> {
 public:
  explicit Event(unsigned flags = cudaEventDefault) {
    check(cudaEventCreateWithFlags(&handle_, flags), "cudaEventCreate");
  }
};

class BlasHandle : public OwnedHandle<cublasHandle_t, cublasDestroy> {
 public:
  explicit BlasHandle(cudaStream_t stream) {
    check(cublasCreate(&handle_), "cublasCreate");
    cublasSetStream(handle_, stream);
    cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_HOST);
  }
};

}  // namespace hyperstream::cuda
