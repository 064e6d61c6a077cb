#include "run/Pipeline.h"

#include "core/Error.h"
#include "core/MutexLocker.h"

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

std::vector<unsigned char*> HostBuffers::get(int count, size_t bytes) {
  if (bytes > bytes_) {
    storage_.clear();  // free first: the new ones may need the room
    bytes_ = bytes;
  }
  while (storage_.size() < static_cast<size_t>(count)) storage_.push_back(allocate_(bytes_));
  std::vector<unsigned char*> buffers(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) buffers[i] = storage_[i].get();
  return buffers;
}

BufferPool::BufferPool(std::vector<unsigned char*> borrowed) : free_(std::move(borrowed)) {}

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

// One run of the pipeline: its buffer pools and queues, and the loops of its three threads. The
// first failure of any of them aborts the others and is rethrown by rethrow().
class PipelineRun {
 public:
  PipelineRun(const std::vector<StripRange>& strips, const StripPipeline::Stages& stages,
              Feedback& feedback, bool exclusiveCompute)
      : strips_(strips),
        stages_(stages),
        feedback_(feedback),
        exclusiveCompute_(exclusiveCompute) {}

  void makePools(int inputBuffers, size_t inputBytes, int outputBuffers, size_t outputBytes,
                 const HostAllocator& allocate, HostBuffers* keptInput) {
    if (inputBuffers > 0 && keptInput)
      inputPool_.emplace(keptInput->get(inputBuffers, inputBytes));
    else if (inputBuffers > 0)
      inputPool_.emplace(inputBuffers, inputBytes, allocate);
    if (stages_.write) outputPool_.emplace(outputBuffers, outputBytes, allocate);
    loaded_.emplace(std::max(2, inputBuffers));
    computed_.emplace(std::max(1, outputBuffers));
  }

  // Reader thread: every strip into a free input buffer, in order.
  void readAll(double& seconds) {
    guarded([&] {
      QElapsedTimer timer;
      for (size_t i = 0; i < strips_.size(); ++i) {
        if (feedback_.isCanceled()) throw Canceled();
        unsigned char* buffer = nullptr;
        if (inputPool_ && !(buffer = inputPool_->take())) return;  // aborted
        const void* data = nullptr;
        {
          const auto turn = takeTurn();
          timer.start();
          data = stages_.read(strips_[i], buffer);
          seconds += timer.nsecsElapsed() * 1e-9;
        }
        if (!loaded_->push({i, data, buffer})) return;
      }
      loaded_->close();
    });
  }

  // Writer thread: the computed strips, in order.
  void writeAll(double& seconds) {
    guarded([&] {
      QElapsedTimer timer;
      while (std::optional<Computed> item = computed_->pop()) {
        timer.start();
        stages_.write(strips_[item->index], item->output);
        seconds += timer.nsecsElapsed() * 1e-9;
        outputPool_->give(item->output);
      }
    });
  }

  // Calling thread: computes each strip as it arrives, reporting progress from `from` to `to`.
  void computeAll(double from, double to) {
    guarded([&] {
      const bool writing = static_cast<bool>(stages_.write);
      while (std::optional<Loaded> item = loaded_->pop()) {
        if (feedback_.isCanceled()) throw Canceled();
        unsigned char* output = nullptr;
        if (writing && !(output = outputPool_->take())) break;  // aborted
        {
          const auto turn = takeTurn();
          stages_.compute(strips_[item->index], item->data, output);
        }
        if (item->poolBuffer) inputPool_->give(item->poolBuffer);
        if (writing && !computed_->push({item->index, output})) break;
        // From the calling thread only: a QGIS feedback delivers progress from other threads
        // late.
        feedback_.setProgress(from + (to - from) * static_cast<double>(item->index + 1) /
                                         static_cast<double>(strips_.size()));
      }
      computed_->close();
    });
  }

  void rethrow() { error_.rethrow(); }

 private:
  // Runs `loop`; a failure aborts every thread's queues and pools.
  template <class Loop>
  void guarded(const Loop& loop) {
    try {
      loop();
    } catch (...) {
      error_.set(std::current_exception());
      loaded_->abort();
      computed_->abort();
      if (inputPool_) inputPool_->close();
      if (outputPool_) outputPool_->close();
    }
  }
  // With exclusive compute the reader and the compute step hold the cores in turn.
  std::optional<MutexLocker> takeTurn() {
    if (!exclusiveCompute_) return std::nullopt;
    return std::optional<MutexLocker>(std::in_place, &cores_);
  }

  const std::vector<StripRange>& strips_;
  const StripPipeline::Stages& stages_;
  Feedback& feedback_;
  bool exclusiveCompute_;
  std::optional<BufferPool> inputPool_, outputPool_;
  std::optional<BoundedQueue<Loaded>> loaded_;
  std::optional<BoundedQueue<Computed>> computed_;
  FirstError error_;
  QMutex cores_;
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
  PipelineRun pipeline(strips, stages, feedback, exclusiveCompute_);
  pipeline.makePools(inputBuffers_, inputBytes_, outputBuffers_, outputBytes_, allocate_,
                     keptInput_);
  std::unique_ptr<QThread> reader(QThread::create([&] { pipeline.readAll(readSeconds_); }));
  std::unique_ptr<QThread> writer;
  if (stages.write) writer.reset(QThread::create([&] { pipeline.writeAll(writeSeconds_); }));
  reader->start();
  if (writer) writer->start();
  pipeline.computeAll(progressFrom, progressTo);
  reader->wait();
  if (writer) writer->wait();
  pipeline.rethrow();
  if (feedback.isCanceled()) throw Canceled();
}

}  // namespace hyperstream
