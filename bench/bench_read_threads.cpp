// The read floor of a machine's page cache: a file read with pread by 1, 2, 4, ... threads, each
// its contiguous share in parts of 8 MiB into a buffer of its own (what a reader thread does
// with no layout to follow), and the GB/s each count gives:
//   bench_read_threads FILE [MAX_THREADS=cores] [ROUNDS=3]
// Run it on a file the page cache (or tmpfs) holds: it measures memory copies, not the disk.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

constexpr int64_t kPart = 8ll << 20;

// Seconds to read [0, size) of `fd` with `threads` threads.
double readAll(int fd, int64_t size, int threads) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([=] {
      std::vector<char> buffer(kPart);
      const int64_t first = size * t / threads, end = size * (t + 1) / threads;
      for (int64_t at = first; at < end;) {
        const ssize_t got = pread(fd, buffer.data(), std::min(kPart, end - at), at);
        if (got <= 0) std::abort();
        at += got;
      }
    });
  for (std::thread& worker : workers) worker.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_read_threads FILE [MAX_THREADS] [ROUNDS]\n");
    return 2;
  }
  const int fd = open(argv[1], O_RDONLY);
  if (fd < 0) {
    std::perror(argv[1]);
    return 1;
  }
  const int64_t size = lseek(fd, 0, SEEK_END);
  const int most =
      argc > 2 ? std::atoi(argv[2]) : static_cast<int>(std::thread::hardware_concurrency());
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  readAll(fd, size, most);  // into the page cache, if it was not
  for (int threads = 1; threads <= most; threads *= 2) {
    std::vector<double> seconds;
    seconds.reserve(rounds);
    for (int r = 0; r < rounds; ++r) seconds.push_back(readAll(fd, size, threads));
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    std::printf("%2d thread(s): %.3f s, %.2f GB/s (median of %d, %.2f GB)\n", threads, median,
                size / median / 1e9, rounds, size / 1e9);
  }
  close(fd);
  return 0;
}
