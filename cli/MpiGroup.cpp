#include "MpiGroup.h"

#include "io/PendingFiles.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>

namespace hyperstream {

namespace {

extern "C" void removePendingAndExit(int signal) {
  removePendingFilesNow();
  _exit(128 + signal);
}

}  // namespace

MpiGroup::MpiGroup(MPI_Comm communicator) : communicator_(communicator) {
  MPI_Comm_rank(communicator_, &rank_);
  MPI_Comm_size(communicator_, &size_);
  MPI_Comm local;
  MPI_Comm_split_type(communicator_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &localRank_);
  MPI_Comm_free(&local);
}

void MpiGroup::agree(bool ok, const std::string& message) {
  const int mine = ok ? 0 : 1;
  std::vector<int> failed(size_);
  MPI_Allgather(&mine, 1, MPI_INT, failed.data(), 1, MPI_INT, communicator_);
  const auto first = std::find(failed.begin(), failed.end(), 1);
  if (first == failed.end()) return;
  const int failedRank = static_cast<int>(first - failed.begin());
  int length = rank_ == failedRank ? static_cast<int>(message.size()) : 0;
  MPI_Bcast(&length, 1, MPI_INT, failedRank, communicator_);
  std::string text = rank_ == failedRank ? message : std::string(length, ' ');
  MPI_Bcast(text.data(), length, MPI_CHAR, failedRank, communicator_);
  throw GroupFailure(failedRank, static_cast<int>(std::count(failed.begin(), failed.end(), 1)),
                     text);
}

void MpiGroup::fail(const std::string& message) {
  agree(false, message);
  throw GroupFailure(rank_, 1, message);  // not reached: agree throws when a rank failed
}

Moments MpiGroup::mergeMoments(const Moments& mine) {
  agree(true, {});
  // Every rank gathers all the moments and merges them in rank order: the same bits everywhere.
  const std::vector<double> packed = mine.packed();
  const int count = static_cast<int>(packed.size());
  std::vector<double> all(packed.size() * size_);
  MPI_Allgather(packed.data(), count, MPI_DOUBLE, all.data(), count, MPI_DOUBLE, communicator_);
  Moments merged(mine.bands);
  for (int r = 0; r < size_; ++r)
    merged.merge(Moments::unpacked(all.data() + static_cast<size_t>(r) * count, mine.bands));
  return merged;
}

ComponentRange MpiGroup::mergeRanges(const ComponentRange& mine) {
  agree(true, {});
  ComponentRange merged = mine;
  const int count = static_cast<int>(mine.minimum.size());
  MPI_Allreduce(mine.minimum.data(), merged.minimum.data(), count, MPI_DOUBLE, MPI_MIN,
                communicator_);
  MPI_Allreduce(mine.maximum.data(), merged.maximum.data(), count, MPI_DOUBLE, MPI_MAX,
                communicator_);
  return merged;
}

std::string MpiGroup::shareText(const std::string& rankZeros) {
  agree(true, {});
  int length = static_cast<int>(rankZeros.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, communicator_);
  std::string text = rank_ == 0 ? rankZeros : std::string(length, ' ');
  MPI_Bcast(text.data(), length, MPI_CHAR, 0, communicator_);
  return text;
}

std::vector<double> MpiGroup::shareNumbers(const std::vector<double>& rankZeros) {
  agree(true, {});
  std::vector<double> numbers = rankZeros;
  MPI_Bcast(numbers.data(), static_cast<int>(numbers.size()), MPI_DOUBLE, 0, communicator_);
  return numbers;
}

std::vector<std::string> MpiGroup::gatherText(const std::string& mine) {
  agree(true, {});
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(size_), offsets(size_, 0);
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, communicator_);
  for (int r = 1; r < size_; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
  std::string all(static_cast<size_t>(offsets.back() + lengths.back()), ' ');
  MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                 MPI_CHAR, communicator_);
  std::vector<std::string> texts;
  texts.reserve(size_);
  for (int r = 0; r < size_; ++r) texts.push_back(all.substr(offsets[r], lengths[r]));
  return texts;
}

std::vector<std::vector<double>> MpiGroup::gatherNumbers(const std::vector<double>& mine) {
  agree(true, {});
  const int count = static_cast<int>(mine.size());  // the same on every rank
  std::vector<double> all(mine.size() * size_);
  MPI_Allgather(mine.data(), count, MPI_DOUBLE, all.data(), count, MPI_DOUBLE, communicator_);
  std::vector<std::vector<double>> parts;
  parts.reserve(size_);
  for (int r = 0; r < size_; ++r)
    parts.emplace_back(all.begin() + static_cast<int64_t>(r) * count,
                       all.begin() + static_cast<int64_t>(r + 1) * count);
  return parts;
}

void MpiGroup::synchronize() {
  agree(true, {});
}

void removePendingFilesOnTermination() {
  struct sigaction action {};
  action.sa_handler = removePendingAndExit;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace hyperstream
