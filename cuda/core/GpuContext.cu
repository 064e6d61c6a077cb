#include "cuda/core/GpuContext.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace hyperstream::cuda {

namespace {

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

}  // namespace

GpuContext::GpuContext(int device, int64_t memoryBytes, std::string description)
    : device_(device), memoryBytes_(memoryBytes), description_(std::move(description)) {
  select();
  copy_ = std::make_unique<Stream>();
  compute_ = std::make_unique<Stream>();
  blas_ = std::make_unique<BlasHandle>(*compute_);
  uploaded_ = std::make_unique<Event>(cudaEventBlockingSync | cudaEventDisableTiming);
  streamDone_ = std::make_unique<Event>(cudaEventBlockingSync | cudaEventDisableTiming);
}

void GpuContext::select() const {
  check(cudaSetDevice(device_), "cudaSetDevice");
}

int64_t GpuContext::budgetBytes() const {
  if (memoryBytes_ > 0) return memoryBytes_;
  size_t freeBytes = 0, totalBytes = 0;
  check(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo");
  // Leave room for cuBLAS's workspace, other programs and the display.
  const int64_t margin = std::max<int64_t>(512 * kMiB, static_cast<int64_t>(totalBytes) / 20);
  return static_cast<int64_t>(freeBytes) - margin;
}

// Page-locked strip buffers. Locking memory the kernel backs with 2 MiB pages is faster than
// cudaHostAlloc's 4 KiB ones; buffers under a page, where the kernel gives none, or where
// registering fails: cudaHostAlloc, then pageable memory (which copies slower).
HostMemory GpuContext::allocateHost(size_t bytes) {
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
  return HostMemory(static_cast<unsigned char*>(memory), [](unsigned char* p) { cudaFreeHost(p); });
}

void GpuContext::synchronize() {
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

void GpuContext::finishWork() const {
  cudaSetDevice(device_);
  if (copy_) cudaStreamSynchronize(*copy_);
  if (compute_) cudaStreamSynchronize(*compute_);
}

void GpuContext::computeAfterCopy() {
  check(cudaEventRecord(*uploaded_, *copy_), "cudaEventRecord");
  check(cudaStreamWaitEvent(*compute_, *uploaded_, 0), "cudaStreamWaitEvent");
  check(cudaEventSynchronize(*uploaded_), "upload");
}

}  // namespace hyperstream::cuda
