#include "io/PendingFiles.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>

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

}  // namespace

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
