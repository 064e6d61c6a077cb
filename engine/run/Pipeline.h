#pragma once
// The strip pipeline: a reader thread, the compute step on the calling thread and a writer
// thread run concurrently over bounded pools of strip buffers.

#include "core/Feedback.h"
#include "core/HostMemory.h"

#include <QMutex>
#include <QWaitCondition>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace hyperstream {

// The strip buffers a job's pipeline keeps: one being read, one queued, one being computed; one
// being filled, one being written.
constexpr int kInputBuffers = 3;
constexpr int kOutputBuffers = 2;

struct StripRange {
  int64_t row0 = 0;
  int64_t rows = 0;
};

// Splits rows [firstRow, firstRow + rows) into strips of at most `rowsPerStrip` rows.
std::vector<StripRange> planStrips(int64_t rows, int64_t rowsPerStrip, int64_t firstRow = 0);

// Strip buffers a job keeps from one pass to the next: each pass would otherwise have their pages
// faulted in (and, for a GPU, locked) again, which costs 0.1-0.7 s a GiB on a VM whose freed
// memory goes back to its host.
class HostBuffers {
 public:
  explicit HostBuffers(HostAllocator allocate) : allocate_(std::move(allocate)) {}
  // `count` buffers of at least `bytes`: those kept, and new ones where fewer or smaller are kept.
  std::vector<unsigned char*> get(int count, size_t bytes);
  void release() { storage_.clear(); }

 private:
  HostAllocator allocate_;
  size_t bytes_ = 0;
  std::vector<HostMemory> storage_;
};

// A fixed set of equally sized buffers; take() blocks until one is free.
class BufferPool {
 public:
  BufferPool(int count, size_t bytes, const HostAllocator& allocate);
  explicit BufferPool(std::vector<unsigned char*> borrowed);  // owned by someone else
  unsigned char* take();                                      // nullptr once closed
  void give(unsigned char* buffer);
  void close();

 private:
  QMutex mutex_;
  QWaitCondition available_;
  std::vector<HostMemory> storage_;
  std::vector<unsigned char*> free_;
  bool closed_ = false;
};

class StripPipeline {
 public:
  struct Stages {
    // Reader thread: bring strip `range` into memory; `buffer` is a free input buffer (nullptr
    // when the pipeline has no input pool: the data already lives elsewhere). Returns the data.
    using Read = std::function<const void*(const StripRange& range, unsigned char* buffer)>;
    Read read;
    // Calling thread: process the strip; `output` is a free output buffer (nullptr without a
    // writer).
    std::function<void(const StripRange& range, const void* input, unsigned char* output)> compute;
    // Writer thread, strips in order (optional).
    std::function<void(const StripRange& range, const unsigned char* output)> write;
  };

  // inputBuffers x inputBytes is the input pool (0 buffers: the caller owns the storage);
  // outputBuffers x outputBytes the output pool, used when a write stage is given; both come
  // from `allocate`. With `exclusiveCompute`, reading and computing take turns instead of
  // overlapping (for compute that keeps every core busy by itself).
  StripPipeline(int inputBuffers, size_t inputBytes, int outputBuffers, size_t outputBytes,
                bool exclusiveCompute, HostAllocator allocate = allocatePageable);

  // The input pool's buffers from `kept` instead of new ones: they outlive this pipeline.
  void keepInputBuffersIn(HostBuffers& kept) { keptInput_ = &kept; }

  // Runs the stages over `strips`, reporting progress from `progressFrom` to `progressTo`.
  // Rethrows the first error of any stage; throws Canceled when feedback says so.
  void run(const std::vector<StripRange>& strips, const Stages& stages, Feedback& feedback,
           double progressFrom, double progressTo);

  // Seconds the reader and writer threads spent inside their stages during the last run.
  double readSeconds() const { return readSeconds_; }
  double writeSeconds() const { return writeSeconds_; }

 private:
  int inputBuffers_;
  size_t inputBytes_;
  int outputBuffers_;
  size_t outputBytes_;
  bool exclusiveCompute_;
  HostAllocator allocate_;
  HostBuffers* keptInput_ = nullptr;
  double readSeconds_ = 0;
  double writeSeconds_ = 0;
};

}  // namespace hyperstream
