#pragma once
// Spatial preprocessing of one strip on the CPU (the CPU backend's spatialPreprocess).

#include "ComputeBackend.h"

#include <vector>

namespace hyperstream {

// Unit spectra (float32: their differences stay accurate to ~1e-7, far inside alpha's 1e-6) and
// validity of a block of whole rows.
struct UnitBlock {
  std::vector<float> unit;
  std::vector<unsigned char> valid;
};

// The window's offsets in a fixed order, each with its reverse and its weight 1/(dr^2 + dc^2).
struct Window {
  struct Offset {
    int dr, dc;
    int reverse;
    double beta;
    bool forward;  // the first of the pair (dr, dc), (-dr, -dc)
  };
  std::vector<Offset> offsets;
  explicit Window(int halo) {
    for (int dr = -halo; dr <= halo; ++dr)
      for (int dc = -halo; dc <= halo; ++dc)
        if (dr != 0 || dc != 0)
          offsets.push_back({dr, dc, 0, 1.0 / (dr * dr + dc * dc), dr > 0 || (dr == 0 && dc > 0)});
    // Offset i's reverse is at the mirrored position of the list.
    for (size_t i = 0; i < offsets.size(); ++i)
      offsets[i].reverse = static_cast<int>(offsets.size() - 1 - i);
  }
};

class CpuSpp {
 public:
  // Returns the sum of alpha over the strip's valid pixels, in pixel order.
  double run(const SppStrip& strip, const SppOutput& output);

 private:
  Window window_{0};
  int windowHalo_ = -1;
  UnitBlock block_;
  std::vector<float> angles_;  // per pixel and window offset; < 0: no neighbour
  std::vector<double> alphas_;
};

}  // namespace hyperstream
