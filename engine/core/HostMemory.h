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
// several megabytes are asked to be backed by 2 MiB pages (madvise, for this buffer only): each
// pass commits its strips' pages afresh, and with 4 KiB pages the page faults cost a tenth of a
// plain file's read.
inline HostMemory allocatePageable(size_t bytes) {
  constexpr size_t kHugePage = 2u << 20;
  if (bytes < 2 * kHugePage)
    return HostMemory(new unsigned char[bytes], [](unsigned char* p) { delete[] p; });
  void* memory = std::aligned_alloc(kHugePage, (bytes + kHugePage - 1) / kHugePage * kHugePage);
  if (!memory) throw std::bad_alloc();
  madvise(memory, bytes, MADV_HUGEPAGE);
  return HostMemory(static_cast<unsigned char*>(memory), [](unsigned char* p) { std::free(p); });
}

}  // namespace hyperstream
