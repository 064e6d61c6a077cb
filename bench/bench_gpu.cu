// The GPU's own rates for PCA's shapes, to set the backend's numbers against:
//   bench_gpu [PIXELS] [BANDS] [COMPONENTS] [CHUNK_PIXELS]
// host->device copies (page-locked and pageable), cuBLAS DSYRK and DGEMM for the Gram matrix
// (bands x bands over PIXELS, in chunks as the backend does), SGEMM for the projection, and the
// eigen-decomposition of a bands x bands covariance with cuSOLVER syevd against LAPACK dsyevr.

#include "CudaTiming.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <lapacke.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

namespace {

void ok(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: %s\n", what, cublasGetStatusString(status));
    std::exit(1);
  }
}
void ok(cusolverStatus_t status, const char* what) {
  if (status != CUSOLVER_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: cuSOLVER status %d\n", what, static_cast<int>(status));
    std::exit(1);
  }
}

double medianHost(int runs, const std::function<void()>& work) {
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    work();
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const long long pixels = argc > 1 ? std::atoll(argv[1]) : 2300LL * 2300;
  const int bands = argc > 2 ? std::atoi(argv[2]) : 198;
  const int components = argc > 3 ? std::atoi(argv[3]) : 10;
  const long long chunk = argc > 4 ? std::atoll(argv[4]) : 165000;
  cudaDeviceProp properties{};
  ok(cudaGetDeviceProperties(&properties, 0), "properties");
  std::printf("%s; %lld pixels x %d bands, %d components, chunks of %lld pixels\n", properties.name,
              pixels, bands, components, chunk);

  // Bus: 1 GiB up, page-locked and pageable.
  const size_t bytes = size_t{1} << 30;
  void* device = nullptr;
  void* pinned = nullptr;
  ok(cudaMalloc(&device, bytes), "cudaMalloc");
  ok(cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault), "cudaHostAlloc");
  std::vector<unsigned char> pageable(bytes, 1);
  std::fill_n(static_cast<unsigned char*>(pinned), bytes, 1);
  const double upPinned = medianGpuSeconds(
      5, [&] { ok(cudaMemcpy(device, pinned, bytes, cudaMemcpyHostToDevice), "up"); });
  const double upPageable = medianGpuSeconds(
      5, [&] { ok(cudaMemcpy(device, pageable.data(), bytes, cudaMemcpyHostToDevice), "up"); });
  const double downPinned = medianGpuSeconds(
      5, [&] { ok(cudaMemcpy(pinned, device, bytes, cudaMemcpyDeviceToHost), "down"); });
  std::printf(
      "host->device: page-locked %.1f GB/s, pageable %.1f GB/s; device->host page-locked "
      "%.1f GB/s\n",
      bytes / upPinned / 1e9, bytes / upPageable / 1e9, bytes / downPinned / 1e9);
  cudaFree(device);
  cudaFreeHost(pinned);

  // Gram matrix of one chunk, repeated over the image as the backend does.
  cublasHandle_t blas;
  ok(cublasCreate(&blas), "cublasCreate");
  double* x = nullptr;
  double* gram = nullptr;
  ok(cudaMalloc(&x, sizeof(double) * bands * chunk), "cudaMalloc");
  ok(cudaMalloc(&gram, sizeof(double) * bands * bands), "cudaMalloc");
  std::vector<double> host(static_cast<size_t>(bands) * chunk);
  std::mt19937_64 random(1);
  std::uniform_real_distribution<double> uniform(-1000, 1000);
  for (double& v : host) v = uniform(random);
  ok(cudaMemcpy(x, host.data(), sizeof(double) * host.size(), cudaMemcpyHostToDevice), "up");
  const long long chunks = (pixels + chunk - 1) / chunk;
  const double one = 1.0;
  const double syrk = medianGpuSeconds(5, [&] {
    for (long long c = 0; c < chunks; ++c)
      ok(cublasDsyrk(blas, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, bands, static_cast<int>(chunk),
                     &one, x, bands, &one, gram, bands),
         "dsyrk");
  });
  const double gemm = medianGpuSeconds(5, [&] {
    for (long long c = 0; c < chunks; ++c)
      ok(cublasDgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, bands, bands, static_cast<int>(chunk), &one, x,
                     bands, x, bands, &one, gram, bands),
         "dgemm");
  });
  const double syrkx = medianGpuSeconds(5, [&] {
    for (long long c = 0; c < chunks; ++c)
      ok(cublasDsyrkx(blas, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, bands, static_cast<int>(chunk),
                      &one, x, bands, x, bands, &one, gram, bands),
         "dsyrkx");
  });
  // The upper triangle as a batch of GEMMs on blocks of rows (blocks x blocks tiles, i <= j).
  auto blockedTriangle = [&](int blocks) {
    const int size = bands / blocks;
    std::vector<const double*> a, b;
    std::vector<double*> c;
    for (int i = 0; i < blocks; ++i)
      for (int j = i; j < blocks; ++j) {
        a.push_back(x + i * size);
        b.push_back(x + j * size);
        c.push_back(gram + i * size + static_cast<size_t>(j) * size * bands);
      }
    const int count = static_cast<int>(c.size());
    const double** da = nullptr;
    const double** db = nullptr;
    double** dc = nullptr;
    ok(cudaMalloc(&da, count * sizeof(double*)), "cudaMalloc");
    ok(cudaMalloc(&db, count * sizeof(double*)), "cudaMalloc");
    ok(cudaMalloc(&dc, count * sizeof(double*)), "cudaMalloc");
    ok(cudaMemcpy(da, a.data(), count * sizeof(double*), cudaMemcpyHostToDevice), "up");
    ok(cudaMemcpy(db, b.data(), count * sizeof(double*), cudaMemcpyHostToDevice), "up");
    ok(cudaMemcpy(dc, c.data(), count * sizeof(double*), cudaMemcpyHostToDevice), "up");
    const double seconds = medianGpuSeconds(5, [&] {
      for (long long k = 0; k < chunks; ++k)
        ok(cublasDgemmBatched(blas, CUBLAS_OP_N, CUBLAS_OP_T, size, size, static_cast<int>(chunk),
                              &one, da, bands, db, bands, &one, dc, bands, count),
           "dgemmBatched");
    });
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    return seconds;
  };
  const double macs = static_cast<double>(chunks) * chunk * bands * bands;  // n b^2 multiply-adds
  std::printf(
      "Gram (n b^2 = %.3g multiply-adds): DSYRK %.2f ms (%.1f TFLOP/s useful), DGEMM %.2f "
      "ms (%.1f TFLOP/s useful)\n",
      macs, syrk * 1e3, macs / syrk / 1e12, gemm * 1e3, macs / gemm / 1e12);
  std::printf("  DSYRKX %.2f ms; upper triangle as batched GEMM tiles:", syrkx * 1e3);
  if (bands % 2 == 0) std::printf(" 2x2 %.2f ms", blockedTriangle(2) * 1e3);
  if (bands % 3 == 0) std::printf(" 3x3 %.2f ms", blockedTriangle(3) * 1e3);
  if (bands % 6 == 0) std::printf(" 6x6 %.2f ms", blockedTriangle(6) * 1e3);
  std::printf("\n");

  // Projection: components x chunk = (components x bands) (bands x chunk) in float32.
  float* xf = reinterpret_cast<float*>(x);
  float* w = nullptr;
  float* y = nullptr;
  ok(cudaMalloc(&w, sizeof(float) * bands * components), "cudaMalloc");
  ok(cudaMalloc(&y, sizeof(float) * components * chunk), "cudaMalloc");
  const float onef = 1.0f, zerof = 0.0f;
  const double sgemm = medianGpuSeconds(5, [&] {
    for (long long c = 0; c < chunks; ++c)
      ok(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, components, static_cast<int>(chunk), bands,
                     &onef, w, components, xf, bands, &zerof, y, components),
         "sgemm");
  });
  std::printf("projection SGEMM: %.2f ms (%.1f TFLOP/s)\n", sgemm * 1e3,
              2.0 * chunks * chunk * bands * components / sgemm / 1e12);

  // Eigen-decomposition of a bands x bands covariance: cuSOLVER syevd vs LAPACK dsyevr.
  std::vector<double> covariance(static_cast<size_t>(bands) * bands);
  for (int i = 0; i < bands; ++i)
    for (int j = 0; j < bands; ++j) {
      double s = 0;
      for (int k = 0; k < 64; ++k)
        s += host[static_cast<size_t>(k) * bands + i] * host[static_cast<size_t>(k) * bands + j];
      covariance[static_cast<size_t>(i) * bands + j] = s + (i == j ? 1.0 : 0.0);
    }
  std::vector<double> a, values(bands), vectors(static_cast<size_t>(bands) * bands);
  std::vector<lapack_int> support(2 * bands);
  lapack_int found = 0;
  const double lapack = medianHost(5, [&] {
    a = covariance;
    LAPACKE_dsyevr(LAPACK_ROW_MAJOR, 'V', 'A', 'U', bands, a.data(), bands, 0, 0, 0, 0, 0, &found,
                   values.data(), vectors.data(), bands, support.data());
  });
  cusolverDnHandle_t solver;
  ok(cusolverDnCreate(&solver), "cusolverDnCreate");
  double* da = nullptr;
  double* dw = nullptr;
  int* info = nullptr;
  ok(cudaMalloc(&da, sizeof(double) * covariance.size()), "cudaMalloc");
  ok(cudaMalloc(&dw, sizeof(double) * bands), "cudaMalloc");
  ok(cudaMalloc(&info, sizeof(int)), "cudaMalloc");
  int lwork = 0;
  ok(cusolverDnDsyevd_bufferSize(solver, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, bands,
                                 da, bands, dw, &lwork),
     "bufferSize");
  double* work = nullptr;
  ok(cudaMalloc(&work, sizeof(double) * lwork), "cudaMalloc");
  int devInfo = 0;
  const double cusolver = medianHost(5, [&] {
    ok(cudaMemcpy(da, covariance.data(), sizeof(double) * covariance.size(),
                  cudaMemcpyHostToDevice),
       "up");
    ok(cusolverDnDsyevd(solver, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, bands, da, bands,
                        dw, work, lwork, info),
       "syevd");
    ok(cudaMemcpy(&devInfo, info, sizeof(int), cudaMemcpyDeviceToHost), "devInfo");
    ok(cudaMemcpy(vectors.data(), da, sizeof(double) * covariance.size(), cudaMemcpyDeviceToHost),
       "down");
  });
  if (devInfo != 0) {
    std::fprintf(stderr, "syevd: devInfo %d\n", devInfo);
    return 1;
  }
  std::printf("eigen %d x %d: LAPACK dsyevr %.2f ms (host), cuSOLVER syevd %.2f ms (with copies)\n",
              bands, bands, lapack * 1e3, cusolver * 1e3);
  return 0;
}
