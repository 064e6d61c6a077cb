#pragma once
// The CPU backend's worker threads, one per core: the calling thread is worker 0, the others come
// from a QThreadPool of the backend's own (never the global one QGIS uses).

#include "core/BlasThreads.h"

#include <QThread>
#include <QThreadPool>

#include <algorithm>
#include <cstdint>

namespace hyperstream {

class WorkerThreads {
 public:
  WorkerThreads() : count_(std::max(1, QThread::idealThreadCount())) {
    pool_.setMaxThreadCount(std::max(1, count_ - 1));
  }
  ~WorkerThreads() { pool_.waitForDone(); }
  WorkerThreads(const WorkerThreads&) = delete;
  WorkerThreads& operator=(const WorkerThreads&) = delete;

  int count() const { return count_; }

  // Runs work(worker) for every worker and waits for all. The workers fill every core, so a BLAS
  // call inside one runs on that worker alone.
  template <class Work>
  void onEach(Work&& work) {
    auto alone = [&work](int worker) {
      const BlasThreadsHere oneThread(1);
      work(worker);
    };
    for (int worker = 1; worker < count_; ++worker)
      pool_.start([&alone, worker] { alone(worker); });
    alone(0);
    pool_.waitForDone();
  }

  // Runs f(first, last) over [0, count) cut into one even range per worker.
  template <class F>
  void split(int64_t count, F&& f) {
    onEach([&](int worker) {
      const int64_t first = count * worker / count_, last = count * (worker + 1) / count_;
      if (first < last) f(first, last);
    });
  }

 private:
  int count_;
  QThreadPool pool_;
};

}  // namespace hyperstream
