// What starting and ending CUDA costs a one-shot process, step by step:
//   bench_cuda_start MODE [DEVICE_MIB=2048] [PINNED_MIB=256]
// MODE: none (return at once: the process's own start and end, to subtract), teardown (free
// everything, then return from main), keep (return from main holding everything: CUDA's exit
// handlers free it), abandon (_exit holding everything: the driver frees it as the process
// ends). Prints each step's seconds since main; a script times the whole process from outside
// (bench/one_shot_gpu.sh).

#include "CudaTiming.h"

#include <cublas_v2.h>
#include <cuda.h>
#include <cusolverDn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

const auto kMain = std::chrono::steady_clock::now();

void step(const char* name) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - kMain).count();
  std::printf("%-28s %.4f\n", name, seconds);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "teardown";
  const size_t deviceBytes = (argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 2048) << 20;
  const size_t pinnedBytes = (argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 256) << 20;
  if (mode == "none") return 0;
  step("main");
  if (cuInit(0) != CUDA_SUCCESS) return 1;
  step("cuInit");
  int count = 0;
  ok(cudaGetDeviceCount(&count), "count");
  step("device count");
  ok(cudaSetDevice(0), "set device");
  ok(cudaFree(nullptr), "context");
  step("context");
  cudaStream_t copy, compute;
  ok(cudaStreamCreate(&copy), "stream");
  ok(cudaStreamCreate(&compute), "stream");
  step("streams");
  cublasHandle_t blas;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) return 1;
  cublasSetStream(blas, compute);
  step("cublasCreate");
  cusolverDnHandle_t solver;
  if (cusolverDnCreate(&solver) != CUSOLVER_STATUS_SUCCESS) return 1;
  step("cusolverDnCreate");
  void* device = nullptr;
  ok(cudaMalloc(&device, deviceBytes), "cudaMalloc");
  step("cudaMalloc");
  void* pinned = nullptr;
  ok(cudaHostAlloc(&pinned, pinnedBytes, cudaHostAllocDefault), "cudaHostAlloc");
  step("cudaHostAlloc");
  // One small product: loads cuBLAS's kernel (lazily loaded modules).
  const float one = 1, zero = 0;
  cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, static_cast<float*>(device), 64,
              static_cast<float*>(device), 64, &zero, static_cast<float*>(device) + 4096, 64);
  ok(cudaStreamSynchronize(compute), "sgemm");
  step("first sgemm");
  ok(cudaMemcpyAsync(device, pinned, pinnedBytes, cudaMemcpyHostToDevice, copy), "upload");
  ok(cudaStreamSynchronize(copy), "upload");
  step("upload pinned");
  if (mode == "abandon") {
    step("_exit");
    _exit(0);
  }
  if (mode == "keep") {
    step("return");
    return 0;
  }
  ok(cudaFreeHost(pinned), "cudaFreeHost");
  step("cudaFreeHost");
  ok(cudaFree(device), "cudaFree");
  step("cudaFree");
  cusolverDnDestroy(solver);
  cublasDestroy(blas);
  cudaStreamDestroy(copy);
  cudaStreamDestroy(compute);
  step("handles destroyed");
  step("return");
  return 0;
}
