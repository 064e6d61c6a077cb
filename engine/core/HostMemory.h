#pragma once
// Host buffers with their own way of being freed (page-locked ones for a GPU backend).

#include <cstddef>
#include <functional>
#include <memory>

namespace hyperstream {

using HostMemory = std::unique_ptr<unsigned char, void (*)(unsigned char*)>;
using HostAllocator = std::function<HostMemory(size_t bytes)>;

// Plain new[]; not value-initialised: pages are only committed when a strip is read into them.
inline HostMemory allocatePageable(size_t bytes) {
  return HostMemory(new unsigned char[bytes], [](unsigned char* p) { delete[] p; });
}

}  // namespace hyperstream
