#include "spp/SppNoise.h"

#include "core/Error.h"

#include <cmath>

namespace hyperstream {

double SppNoise::trace() const {
  if (pairs_ < 2)
    throw Error("NOISE_ADJUSTED",
                "the noise estimate needs at least two valid pixels with a valid upper-left "
                "neighbour (" +
                    std::to_string(pairs_) + " found)");
  const auto m = static_cast<double>(pairs_);
  double trace = 0;
  for (int b = 0; b < bands_; ++b) trace += 0.5 * (squares_[b] - sum_[b] * sum_[b] / m) / (m - 1);
  return trace;
}

}  // namespace hyperstream
