#include "run/JobGroup.h"

#include "io/PendingRaster.h"

#include <QThread>

#include <algorithm>
#include <limits>
#include <utility>

namespace hyperstream {

JobGroup::JobGroup() = default;
JobGroup::~JobGroup() = default;

PendingRaster& JobGroup::shareOutput(std::unique_ptr<PendingRaster> rankZeros) {
  outputs_.push_back(std::move(rankZeros));
  return *outputs_.back();
}

std::string describeBackends(const std::vector<std::string>& names) {
  if (names.size() == 1) return names[0];
  if (std::all_of(names.begin(), names.end(), [&](const std::string& n) { return n == names[0]; }))
    return std::to_string(names.size()) + " x " + names[0];
  std::string joined;
  for (const std::string& name : names) joined += (joined.empty() ? "" : " + ") + name;
  return joined;
}

// What the threads share: an exchange area filled by every member, then read by all.
struct ThreadGroup::Shared {
  struct Payload {
    std::vector<double> numbers;
    std::string text;
  };
  explicit Shared(int count) : size(count), payloads(count) {}

  // Waits until every member has put its payload in, then returns them all in rank order;
  // throws GroupFailure once a member failed.
  std::vector<Payload> exchange(int rank, Payload mine) {
    QMutexLocker lock(&mutex);
    throwIfFailed();
    payloads[rank] = std::move(mine);
    if (++arrived == size) {
      arrived = 0;
      ++round;
      results = payloads;
      changed.wakeAll();
      return results;
    }
    const uint64_t myRound = round;
    while (round == myRound && !failure) changed.wait(&mutex);
    if (round == myRound) throwIfFailed();
    return results;
  }
  void fail(int rank, std::exception_ptr error, const std::string& message) {
    QMutexLocker lock(&mutex);
    if (!failure || rank < failedRank) {
      failure = std::move(error);
      failedRank = rank;
      failedMessage = message;
    }
    changed.wakeAll();
  }
  void throwIfFailed() const {
    if (failure) throw GroupFailure(failedRank, 1, failedMessage);
  }

  const int size;
  QMutex mutex;
  QWaitCondition changed;
  std::vector<Payload> payloads, results;
  int arrived = 0;
  uint64_t round = 0;
  std::exception_ptr failure;
  int failedRank = std::numeric_limits<int>::max();
  std::string failedMessage;
  std::vector<std::unique_ptr<PendingRaster>> outputs;  // rank 0's, alive till every thread ends
  QMutex outputLock;
};

class ThreadGroup::Member : public JobGroup {
 public:
  Member(Shared& shared, int rank) : shared_(shared), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return shared_.size; }

  Moments mergeMoments(const Moments& mine) override {
    Moments merged(mine.bands);
    for (const Shared::Payload& part : shared_.exchange(rank_, {mine.packed(), {}}))
      merged.merge(Moments::unpacked(part.numbers.data(), mine.bands));
    return merged;
  }
  ComponentRange mergeRanges(const ComponentRange& mine) override {
    std::vector<double> packed = mine.minimum;
    packed.insert(packed.end(), mine.maximum.begin(), mine.maximum.end());
    ComponentRange merged;
    for (const Shared::Payload& part : shared_.exchange(rank_, {packed, {}})) {
      ComponentRange range;
      const auto half = part.numbers.begin() + static_cast<int64_t>(part.numbers.size() / 2);
      range.minimum.assign(part.numbers.begin(), half);
      range.maximum.assign(half, part.numbers.end());
      merged.merge(range);
    }
    return merged;
  }
  std::string shareText(const std::string& rankZeros) override {
    return shared_.exchange(rank_, {{}, rankZeros})[0].text;
  }
  std::vector<double> shareNumbers(const std::vector<double>& rankZeros) override {
    return shared_.exchange(rank_, {rankZeros, {}})[0].numbers;
  }
  std::vector<std::string> gatherText(const std::string& mine) override {
    std::vector<std::string> all;
    for (const Shared::Payload& part : shared_.exchange(rank_, {{}, mine}))
      all.push_back(part.text);
    return all;
  }
  std::vector<std::vector<double>> gatherNumbers(const std::vector<double>& mine) override {
    std::vector<std::vector<double>> all;
    for (const Shared::Payload& part : shared_.exchange(rank_, {mine, {}}))
      all.push_back(part.numbers);
    return all;
  }
  void synchronize() override { shared_.exchange(rank_, {}); }
  PendingRaster& shareOutput(std::unique_ptr<PendingRaster> rankZeros) override {
    if (rank_ == 0) shared_.outputs.push_back(std::move(rankZeros));
    synchronize();  // rank 0 has created it
    return *shared_.outputs[sharedOutputs_++];
  }
  QMutex& outputLock() override { return shared_.outputLock; }

  void fail(std::exception_ptr error, const std::string& message) {
    shared_.fail(rank_, std::move(error), message);
  }

 private:
  Shared& shared_;
  const int rank_;
  size_t sharedOutputs_ = 0;  // the outputs shared so far
};

ThreadGroup::ThreadGroup(int size) : shared_(std::make_unique<Shared>(size)) {
  for (int rank = 0; rank < size; ++rank)
    members_.push_back(std::make_unique<Member>(*shared_, rank));
}

ThreadGroup::~ThreadGroup() = default;

void ThreadGroup::run(const std::function<void(JobGroup&)>& work) {
  std::vector<std::unique_ptr<QThread>> threads;
  for (auto& member : members_) {
    Member* m = member.get();
    threads.emplace_back(QThread::create([m, &work] {
      try {
        work(*m);
      } catch (const GroupFailure&) {
        // Another member failed first: its exception is the one reported.
      } catch (const std::exception& e) {
        m->fail(std::current_exception(), e.what());
      } catch (...) {
        m->fail(std::current_exception(), "unknown error");
      }
    }));
    threads.back()->start();
  }
  for (auto& thread : threads) thread->wait();
  shared_->outputs.clear();  // committed, or removed now that no thread writes to it
  if (shared_->failure) std::rethrow_exception(shared_->failure);
}

namespace {

std::vector<double> packed(const DeviceTimes& t) {
  return {t.upload,
          t.moments,
          t.range,
          t.projection,
          t.download,
          t.spp,
          static_cast<double>(t.uploadBytes),
          static_cast<double>(t.downloadBytes)};
}

// Workers run side by side: each stage took as long as its slowest worker; bytes add up.
DeviceTimes slowestOf(const std::vector<std::vector<double>>& workers) {
  DeviceTimes t;
  for (const std::vector<double>& w : workers) {
    t.upload = std::max(t.upload, w[0]);
    t.moments = std::max(t.moments, w[1]);
    t.range = std::max(t.range, w[2]);
    t.projection = std::max(t.projection, w[3]);
    t.download = std::max(t.download, w[4]);
    t.spp = std::max(t.spp, w[5]);
    t.uploadBytes += static_cast<int64_t>(w[6]);
    t.downloadBytes += static_cast<int64_t>(w[7]);
  }
  return t;
}

}  // namespace

DeviceTimes slowestWorker(JobGroup& group, const DeviceTimes& mine) {
  return slowestOf(group.gatherNumbers(packed(mine)));
}

}  // namespace hyperstream
