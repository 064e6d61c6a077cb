#pragma once
// Host buffers with their own way of being freed (page-locked ones for a GPU backend).

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>

namespace hyperstream {

using HostMemory = std::unique_ptr<unsigned char, void (*)(unsigned char*)>;
using HostAllocator = std::function<HostMemory(size_t bytes)>;

// Not value-initialised: pages are only committed when a strip is read into them. Buffers of
// several MiB ask for transparent huge pages (a hint for this range only; many systems grant them
// only on request): committing a 2 MiB page costs one fault instead of 512.
inline HostMemory allocatePageable(size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr size_t kHugePage = size_t{2} << 20;
  if (bytes >= 2 * kHugePage) {
    const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    if (void* p = std::aligned_alloc(kHugePage, rounded)) {
      madvise(p, rounded, MADV_HUGEPAGE);  // only a hint: failure leaves ordinary pages
      return HostMemory(static_cast<unsigned char*>(p), [](unsigned char* q) { std::free(q); });
    }
    throw std::bad_alloc();
  }
#endif
  return HostMemory(new unsigned char[bytes], [](unsigned char* p) { delete[] p; });
}

}  // namespace hyperstream
