#include "run/Pipeline.h"

#include "core/Error.h"

#include <QElapsedTimer>
#include <QThread>

#include <algorithm>
#include <exception>
#include <optional>

namespace hyperstream {

std::vector<StripRange> planStrips(int64_t rows, int64_t rowsPerStrip, int64_t firstRow) {
  std::vector<StripRange> strips;
  rowsPerStrip = std::max<int64_t>(1, rowsPerStrip);
  for (int64_t row = 0; row < rows; row += rowsPerStrip)
    strips.push_back({firstRow + row, std::min(rowsPerStrip, rows - row)});
  return strips;
}

BufferPool::BufferPool(int count, size_t bytes, const HostAllocator& allocate) {
  for (int i = 0; i < count; ++i) {
    storage_.push_back(allocate(bytes));
    free_.push_back(storage_.back().get());
  }
}

unsigned char* BufferPool::take() {
  QMutexLocker lock(&mutex_);
  while (free_.empty() && !closed_) available_.wait(&mutex_);
  if (closed_) return nullptr;
  unsigned char* buffer = free_.back();
  free_.pop_back();
  return buffer;
}

void BufferPool::give(unsigned char* buffer) {
  QMutexLocker lock(&mutex_);
  free_.push_back(buffer);
  available_.wakeOne();
}

void BufferPool::close() {
  QMutexLocker lock(&mutex_);
  closed_ = true;
  available_.wakeAll();
}

namespace {

// A bounded FIFO between two threads; pop() returns nothing once closed and drained.
template <class T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : capacity_(std::max<size_t>(1, capacity)) {}
  bool push(T item) {
    QMutexLocker lock(&mutex_);
    while (items_.size() >= capacity_ && !closed_) changed_.wait(&mutex_);
    if (closed_) return false;
    items_.push_back(std::move(item));
    changed_.wakeAll();
    return true;
  }
  std::optional<T> pop() {
    QMutexLocker lock(&mutex_);
    while (items_.empty() && !closed_) changed_.wait(&mutex_);
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    changed_.wakeAll();
    return item;
  }
  void close() {
    QMutexLocker lock(&mutex_);
    closed_ = true;
    changed_.wakeAll();
  }
  // Closes and throws away what is queued (after an error).
  void abort() {
    QMutexLocker lock(&mutex_);
    closed_ = true;
    items_.clear();
    changed_.wakeAll();
  }

 private:
  QMutex mutex_;
  QWaitCondition changed_;
  std::deque<T> items_;
  size_t capacity_;
  bool closed_ = false;
};

struct Loaded {
  size_t index;
  const void* data;
  unsigned char* poolBuffer;
};

struct Computed {
  size_t index;
  unsigned char* output;
};

// The first failure of any thread; later ones are consequences of the abort.
class FirstError {
 public:
  void set(std::exception_ptr error) {
    QMutexLocker lock(&mutex_);
    if (!error_) error_ = std::move(error);
  }
  bool isSet() {
    QMutexLocker lock(&mutex_);
    return static_cast<bool>(error_);
  }
  void rethrow() {
    QMutexLocker lock(&mutex_);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  QMutex mutex_;
  std::exception_ptr error_;
};

}  // namespace

StripPipeline::StripPipeline(int inputBuffers, size_t inputBytes, int outputBuffers,
                             size_t outputBytes, bool exclusiveCompute, HostAllocator allocate)
    : inputBuffers_(inputBuffers),
      inputBytes_(inputBytes),
      outputBuffers_(outputBuffers),
      outputBytes_(outputBytes),
      exclusiveCompute_(exclusiveCompute),
      allocate_(std::move(allocate)) {}

void StripPipeline::run(const std::vector<StripRange>& strips, const Stages& stages,
                        Feedback& feedback, double progressFrom, double progressTo) {
  readSeconds_ = writeSeconds_ = 0;
  const bool writing = static_cast<bool>(stages.write);
  std::optional<BufferPool> inputPool;
  if (inputBuffers_ > 0) inputPool.emplace(inputBuffers_, inputBytes_, allocate_);
  std::optional<BufferPool> outputPool;
  if (writing) outputPool.emplace(outputBuffers_, outputBytes_, allocate_);
  BoundedQueue<Loaded> loaded(std::max(2, inputBuffers_));
  BoundedQueue<Computed> computed(std::max(1, outputBuffers_));
  FirstError error;
  QMutex cores;  // held by the reader and the compute step in turn when compute is exclusive
  auto takeTurn = [&]() -> std::optional<QMutexLocker> {
    if (!exclusiveCompute_) return std::nullopt;
    return std::optional<QMutexLocker>(std::in_place, &cores);
  };

  auto abortAll = [&] {
    loaded.abort();
    computed.abort();
    if (inputPool) inputPool->close();
    if (outputPool) outputPool->close();
  };
  auto progress = [&](size_t done) {
    feedback.setProgress(progressFrom + (progressTo - progressFrom) * static_cast<double>(done) /
                                            static_cast<double>(strips.size()));
  };

  std::unique_ptr<QThread> reader(QThread::create([&] {
    try {
      QElapsedTimer timer;
      for (size_t i = 0; i < strips.size(); ++i) {
        if (feedback.isCanceled()) throw Canceled();
        unsigned char* buffer = nullptr;
        if (inputPool && !(buffer = inputPool->take())) return;  // aborted
        const void* data = nullptr;
        {
          const auto turn = takeTurn();
          timer.start();
          data = stages.read(strips[i], buffer);
          readSeconds_ += timer.nsecsElapsed() * 1e-9;
        }
        if (!loaded.push({i, data, buffer})) return;
      }
      loaded.close();
    } catch (...) {
      error.set(std::current_exception());
      abortAll();
    }
  }));
  std::unique_ptr<QThread> writer;
  if (writing) {
    writer.reset(QThread::create([&] {
      try {
        QElapsedTimer timer;
        while (std::optional<Computed> item = computed.pop()) {
          timer.start();
          stages.write(strips[item->index], item->output);
          writeSeconds_ += timer.nsecsElapsed() * 1e-9;
          outputPool->give(item->output);
        }
      } catch (...) {
        error.set(std::current_exception());
        abortAll();
      }
    }));
  }
  reader->start();
  if (writer) writer->start();

  try {
    while (std::optional<Loaded> item = loaded.pop()) {
      if (feedback.isCanceled()) throw Canceled();
      unsigned char* output = nullptr;
      if (writing && !(output = outputPool->take())) break;  // aborted
      {
        const auto turn = takeTurn();
        stages.compute(strips[item->index], item->data, output);
      }
      if (item->poolBuffer) inputPool->give(item->poolBuffer);
      if (writing && !computed.push({item->index, output})) break;
      // From the calling thread only: a QGIS feedback delivers progress from other threads late.
      progress(item->index + 1);
    }
    computed.close();
  } catch (...) {
    error.set(std::current_exception());
    abortAll();
  }
  reader->wait();
  if (writer) writer->wait();
  error.rethrow();
  if (feedback.isCanceled()) throw Canceled();
}

}  // namespace hyperstream
