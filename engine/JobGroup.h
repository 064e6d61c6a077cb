#pragma once
// The processes that share one job: the ranks of an MPI run (hyperstream-mpi), or just this one.
// Each process handles one band of image rows; the group merges what the job needs from all of
// them. The engine knows nothing of MPI: cli/MpiGroup implements this interface over it. Every
// process calls the merging functions in the same order; a process that fails reports it in its
// next call (see MpiGroup), so that the others stop there too instead of waiting for it.

#include "ComputeBackend.h"
#include "Moments.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hyperstream {

class JobGroup {
 public:
  virtual ~JobGroup() = default;
  virtual int rank() const { return 0; }
  virtual int size() const { return 1; }
  // Every process's moments merged in rank order: the same bits on every process.
  virtual Moments mergeMoments(const Moments& mine) { return mine; }
  // Every process's component ranges merged.
  virtual ComponentRange mergeRanges(const ComponentRange& mine) { return mine; }
  // Rank 0's text, on every process.
  virtual std::string shareText(const std::string& rankZeros) { return rankZeros; }
  // Returns once every process got here.
  virtual void synchronize() {}
  // Rank 0's files of an output that is not committed yet (none once it is): what to remove if
  // the job is killed.
  virtual void setPendingFiles(const std::vector<std::string>& files) { static_cast<void>(files); }
};

// The rows [first, first + count) that process `rank` of `size` handles: rank r gets
// [r * height / size, (r + 1) * height / size).
struct RowShare {
  int64_t first = 0;
  int64_t count = 0;
};
inline RowShare rowShare(int rank, int size, int64_t height) {
  const int64_t first = height * rank / size;
  return {first, height * (rank + 1) / size - first};
}

}  // namespace hyperstream
