#include "core/AddressSpace.h"

#include "core/Error.h"

#include <QThread>

#include <cblas.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

namespace hyperstream {

namespace {

// What Debian's OpenBLAS 0.3.21 allocates per thread on its first use (seen in its malloc calls).
constexpr int64_t kBlasBufferBytes = (128ll << 20) + 4096;
constexpr int64_t kStackBytes = 8ll << 20;  // per thread the job starts
constexpr int64_t kMarginBytes = 128ll << 20;

int64_t mappedNow() {
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (!statm) return 0;
  long long pages = 0;
  const bool ok = std::fscanf(statm, "%lld", &pages) == 1;
  std::fclose(statm);
  return ok ? pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace

std::optional<int64_t> addressSpaceLeft() {
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<int64_t>(limit.rlim_cur) - mappedNow();
}

bool checkAddressSpace(int64_t ramBytes) {
  const std::optional<int64_t> left = addressSpaceLeft();
  if (!left) return false;
  const int threads = QThread::idealThreadCount();
  const int64_t others =
      openblas_get_num_threads() * kBlasBufferBytes + (threads + 4) * kStackBytes + kMarginBytes;
  if (ramBytes + others > *left) {
    const int64_t most = (*left - others) >> 20;
    throw Error("RAM_MB",
                "this process may map only " + std::to_string(*left >> 20) +
                    " MiB more (ulimit -v), and OpenBLAS and the threads need " +
                    std::to_string(others >> 20) + " MiB of it: " +
                    (most >= 16 ? "lower the RAM budget to " + std::to_string(most) + " MiB at most"
                                : std::string("raise the limit")));
  }
  return true;
}

}  // namespace hyperstream
