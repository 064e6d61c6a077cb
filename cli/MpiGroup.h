#pragma once
// The ranks of an MPI run as the engine's JobGroup. Each merging call starts with a status
// exchange: a rank whose job failed calls fail() instead of its next merging call, and every
// rank then learns the failure (which rank, what) in that same exchange and stops with a
// GroupFailure, so that nobody waits forever for a rank that will not come.

#include "run/JobGroup.h"

#include <mpi.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace hyperstream {

class MpiGroup : public JobGroup {
 public:
  explicit MpiGroup(MPI_Comm communicator);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool inOneProcess() const override { return false; }
  // This rank's number among the ranks on its machine (to pick a GPU).
  int localRank() const { return localRank_; }

  Moments mergeMoments(const Moments& mine) override;
  ComponentRange mergeRanges(const ComponentRange& mine) override;
  std::string shareText(const std::string& rankZeros) override;
  std::vector<double> shareNumbers(const std::vector<double>& rankZeros) override;
  std::vector<std::string> gatherText(const std::string& mine) override;
  std::vector<std::vector<double>> gatherNumbers(const std::vector<double>& mine) override;
  void synchronize() override;

  // Instead of the next merging call, on a rank whose job failed: always throws GroupFailure.
  [[noreturn]] void fail(const std::string& message);

 private:
  // The status exchange; throws GroupFailure when a rank failed.
  void agree(bool ok, const std::string& message);
  MPI_Comm communicator_;
  int rank_ = 0, size_ = 1, localRank_ = 0;
};

// Removes the pending output files and exits on SIGTERM: when a rank dies, mpirun terminates the
// others, and rank 0 then removes the output it had started.
void removePendingFilesOnTermination();

}  // namespace hyperstream
