// The cores' float64 multiply-add rate, the ceiling of the CPU's RX and ACE projection:
//   bench_fma CPUS [SECONDS=1]
// CPUS lists the logical CPUs to run on, one thread pinned to each ("0", "0,1", "0-15"). Each
// thread runs 16 independent chains of vector multiply-adds (8 lanes with AVX-512, else 4 with
// AVX2 and FMA; 16 chains hide the latency of two pipes) and the program prints each thread's
// and the sum's billions of multiply-adds (scalar) per second. Two CPUs that share a physical core
// give half each of what one gives alone.

#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kChains = 16;

using Wide = double __attribute__((vector_size(64)));
using Narrow = double __attribute__((vector_size(32)));

// Multiply-adds (scalar) per second over `seconds` of kChains chains of W-lane vectors.
template <class Lanes, int W>
[[gnu::always_inline]] inline double multiplyAddsFor(double seconds) {
  Lanes chain[kChains], factor, addend;
#pragma GCC unroll 16
  for (int c = 0; c < kChains; ++c)
    for (int l = 0; l < W; ++l) chain[c][l] = 1.0 + 1e-9 * (c * W + l);
  for (int l = 0; l < W; ++l) {
    factor[l] = 0.999999999;
    addend[l] = 1e-9;
  }
  constexpr long kStep = 1 << 20;  // loops between clock reads
  long loops = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    for (long i = 0; i < kStep; ++i)
#pragma GCC unroll 16
      for (int c = 0; c < kChains; ++c) {
        chain[c] = chain[c] * factor + addend;
      }
    asm volatile("" : : "r"(chain) : "memory");  // the chains' values are needed here
    loops += kStep;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return static_cast<double>(loops) * kChains * W / elapsed;
}

__attribute__((target("avx512f"))) double wideRate(double seconds) {
  return multiplyAddsFor<Wide, 8>(seconds);
}

__attribute__((target("avx2,fma"))) double narrowRate(double seconds) {
  return multiplyAddsFor<Narrow, 4>(seconds);
}

std::vector<int> parseCpus(const std::string& text) {
  std::vector<int> cpus;
  size_t at = 0;
  while (at < text.size()) {
    const size_t comma = text.find(',', at);
    const std::string part =
        text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const size_t dash = part.find('-');
    const int first = std::atoi(part.c_str());
    const int last = dash == std::string::npos ? first : std::atoi(part.c_str() + dash + 1);
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return cpus;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_fma CPUS [SECONDS=1]\n");
    return 2;
  }
  const std::vector<int> cpus = parseCpus(argv[1]);
  const double seconds = argc > 2 ? std::atof(argv[2]) : 1.0;
  std::vector<double> rates(cpus.size());
  std::vector<std::thread> threads;
  for (size_t t = 0; t < cpus.size(); ++t)
    threads.emplace_back([&, t] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpus[t], &set);
      pthread_setaffinity_np(pthread_self(), sizeof set, &set);
      rates[t] = __builtin_cpu_supports("avx512f") ? wideRate(seconds) : narrowRate(seconds);
    });
  double total = 0;
  for (size_t t = 0; t < cpus.size(); ++t) {
    threads[t].join();
    total += rates[t];
  }
  std::printf("cpus %s:", argv[1]);
  for (size_t t = 0; t < cpus.size(); ++t) std::printf(" %.1f", rates[t] * 1e-9);
  std::printf("; total %.1f G multiply-adds/s\n", total * 1e-9);
  return 0;
}
