#pragma once
// What the CUDA benchmarks share: exit on a CUDA error, and the median GPU time of a piece of work.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

inline void ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

// Median seconds of `runs` runs of `work` on the GPU (events around it), after one warm-up run.
inline double medianGpuSeconds(int runs, const std::function<void()>& work) {
  cudaEvent_t start, stop;
  ok(cudaEventCreate(&start), "event");
  ok(cudaEventCreate(&stop), "event");
  work();  // warm-up: loads the kernels
  ok(cudaDeviceSynchronize(), "warm-up");
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    ok(cudaEventRecord(start), "record");
    work();
    ok(cudaEventRecord(stop), "record");
    ok(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    ok(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    times.push_back(ms * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}
