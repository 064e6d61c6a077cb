#pragma once
// A std::vector whose storage starts on a cache line (64 bytes): a 64-byte vector load at a
// multiple of 64 bytes from its start never straddles two lines. glibc's malloc aligns to 16
// bytes, and its large blocks (mapped pages) start 16 bytes into a page, so that every such load
// from them straddled two lines.

#include <cstddef>
#include <new>
#include <vector>

namespace hyperstream {

constexpr std::size_t kCacheLine = 64;

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  explicit CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(std::size_t count) {
    return static_cast<T*>(::operator new(count * sizeof(T), std::align_val_t(kCacheLine)));
  }
  void deallocate(T* memory, std::size_t) {
    ::operator delete(memory, std::align_val_t(kCacheLine));
  }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const CacheLineAllocator<U>&) const {
    return false;
  }
};

template <class T>
using CacheLineVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace hyperstream
