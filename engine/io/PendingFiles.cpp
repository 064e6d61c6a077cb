#include "io/PendingFiles.h"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstring>
#include <iterator>
#include <mutex>

namespace hyperstream {

namespace {

// Fixed storage, so that a signal handler reads it without allocating or locking. A slot's
// path is written while the slot is Claimed and read only while it is Ready.
enum SlotState : int { Free, Claimed, Ready };
constexpr int kSlots = 64;
constexpr size_t kMaxPathBytes = 4096;
struct Slot {
  std::atomic<int> state{Free};
  char path[kMaxPathBytes];
};
std::array<Slot, kSlots> slots;

// RemoveOnTermination's handlers: installed by the first guard, removed by the last.
constexpr int kEndingSignals[] = {SIGTERM, SIGINT, SIGHUP};
std::mutex guardLock;
int guards = 0;
bool installed[std::size(kEndingSignals)] = {};

extern "C" void removeThenEnd(int signal) {
  removePendingFilesNow();
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

}  // namespace

RemoveOnTermination::RemoveOnTermination() {
  const std::lock_guard<std::mutex> lock(guardLock);
  if (guards++ > 0) return;
  for (size_t i = 0; i < std::size(kEndingSignals); ++i) {
    struct sigaction current {};
    installed[i] = sigaction(kEndingSignals[i], nullptr, &current) == 0 &&
                   !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL;
    if (installed[i]) std::signal(kEndingSignals[i], removeThenEnd);
  }
}

RemoveOnTermination::~RemoveOnTermination() {
  const std::lock_guard<std::mutex> lock(guardLock);
  if (--guards > 0) return;
  for (size_t i = 0; i < std::size(kEndingSignals); ++i) {
    struct sigaction current {};
    if (installed[i] && sigaction(kEndingSignals[i], nullptr, &current) == 0 &&
        !(current.sa_flags & SA_SIGINFO) && current.sa_handler == removeThenEnd)
      std::signal(kEndingSignals[i], SIG_DFL);
    installed[i] = false;
  }
}

void PendingFiles::add(const std::string& path) {
  if (path.size() >= kMaxPathBytes) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = Free;
    if (!slots[i].state.compare_exchange_strong(expected, Claimed)) continue;
    std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
    slots[i].state.store(Ready);
    slots_.push_back(i);
    return;
  }
  // Every slot is taken: this path is left to the next run's clean-up.
}

PendingFiles::~PendingFiles() {
  for (int i : slots_) slots[i].state.store(Free);
}

void removePendingFilesNow() {
  for (Slot& slot : slots)
    if (slot.state.load() == Ready) unlink(slot.path);  // fails harmlessly on folders
  for (Slot& slot : slots)
    if (slot.state.load() == Ready) rmdir(slot.path);  // fails harmlessly on files
}

}  // namespace hyperstream
