#pragma once
// The workers that share one job, each handling one band of image rows: the ranks of an MPI run
// (cli/MpiGroup), the threads of a run on several GPUs (ThreadGroup below), or just this one
// (JobGroup itself). The group merges what the job needs from all of them. Every worker calls the
// merging functions in the same order; a worker that fails makes the others stop (GroupFailure)
// in their next call instead of waiting for it.

#include "core/Error.h"
#include "run/Kernels.h"
#include "stats/Moments.h"

#include <QMutex>
#include <QWaitCondition>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace hyperstream {

class PendingRaster;

class JobGroup {
 public:
  JobGroup();
  virtual ~JobGroup();
  virtual int rank() const { return 0; }
  virtual int size() const { return 1; }
  // Workers in one process share one output dataset; MPI ranks each open the output file.
  virtual bool inOneProcess() const { return true; }

  // Every worker's moments merged in rank order: the same bits on every worker.
  virtual Moments mergeMoments(const Moments& mine) { return mine; }
  // Every worker's component ranges merged.
  virtual ComponentRange mergeRanges(const ComponentRange& mine) { return mine; }
  // Rank 0's text or numbers, on every worker (the numbers have the same count everywhere).
  virtual std::string shareText(const std::string& rankZeros) { return rankZeros; }
  virtual std::vector<double> shareNumbers(const std::vector<double>& rankZeros) {
    return rankZeros;
  }
  // Every worker's values, in rank order.
  virtual std::vector<std::string> gatherText(const std::string& mine) { return {mine}; }
  virtual std::vector<std::vector<double>> gatherNumbers(const std::vector<double>& mine) {
    return {mine};
  }
  // Returns once every worker got here.
  virtual void synchronize() {}

  // Workers in one process: rank 0's output (null on the other ranks), kept by the group until
  // every worker is done with it; writes to it take outputLock(). A job with several outputs
  // shares them one call each, in the same order on every worker.
  virtual PendingRaster& shareOutput(std::unique_ptr<PendingRaster> rankZeros);
  virtual QMutex& outputLock() { return outputLock_; }

 private:
  std::vector<std::unique_ptr<PendingRaster>> outputs_;
  QMutex outputLock_;
};

// The workers' backends as one line: "gpu 0 (...)" for one worker, "gpu 0 (...) + gpu 1 (...)",
// "3 x cpu (...)" when all alike.
std::string describeBackends(const std::vector<std::string>& names);

// The workers' device times: each stage as long as the slowest worker's; bytes add up.
DeviceTimes slowestWorker(JobGroup& group, const DeviceTimes& mine);

// The rows [first, first + count) that worker `rank` of `size` handles: rank r gets
// [r * height / size, (r + 1) * height / size).
struct RowShare {
  int64_t first = 0;
  int64_t count = 0;
};
inline RowShare rowShare(int rank, int size, int64_t height) {
  const int64_t first = height * rank / size;
  return {first, height * (rank + 1) / size - first};
}

// Threads of one process sharing a job (one per GPU). run() starts `size` threads, each calling
// work(its JobGroup), and waits for all; when one throws, the others stop at their next merging
// call, and run() rethrows the first failure (the exception itself, with its type).
class ThreadGroup {
 public:
  explicit ThreadGroup(int size);
  ~ThreadGroup();
  void run(const std::function<void(JobGroup&)>& work);

 private:
  class Member;
  struct Shared;
  std::unique_ptr<Shared> shared_;
  std::vector<std::unique_ptr<Member>> members_;
};

}  // namespace hyperstream
