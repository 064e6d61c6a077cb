// What the signal subspace estimate (stats/SignalSubspace: HySime and the HFC virtual
// dimensionality) adds to every fit: its time from moments of 224 and 425 bands (AVIRIS, AVIRIS-NG
// band counts), medians of 5. The moments are made up (a rank-8 signal plus noise over DN means);
// the estimate's cost depends on the band count only.
//
//   build/bench/bench_subspace
#include "stats/SignalSubspace.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

int main() {
  for (const int bands : {224, 425}) {
    constexpr int kRank = 8;
    hyperstream::Moments moments(bands);
    moments.count = 1000000;
    std::mt19937 random(1);
    std::normal_distribution<double> normal;
    std::vector<double> loadings(static_cast<size_t>(bands) * kRank);
    for (double& value : loadings) value = normal(random);
    for (int i = 0; i < bands; ++i) {
      moments.mean[i] = 3000 + i;
      for (int j = 0; j < bands; ++j) {
        double signal = 0;
        for (int k = 0; k < kRank; ++k) signal += loadings[i * kRank + k] * loadings[j * kRank + k];
        moments.comoment[static_cast<size_t>(i) * bands + j] =
            (1e4 * signal + (i == j ? 400.0 : 0.0)) * static_cast<double>(moments.count);
      }
    }
    std::vector<int> used(static_cast<size_t>(bands));
    for (int i = 0; i < bands; ++i) used[i] = i;
    std::vector<double> seconds;
    int dimension = 0;
    for (int run = 0; run < 5; ++run) {
      const auto start = std::chrono::steady_clock::now();
      dimension = hyperstream::estimateSignalSubspace(moments, used).dimension;
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(seconds.begin(), seconds.end());
    std::printf("%d bands: %.1f ms (median of 5), HySime dimension %d\n", bands, seconds[2] * 1e3,
                dimension);
  }
}
