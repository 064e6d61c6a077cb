#pragma once
// How a search scores a valid pixel from its products z = Wᵀ(x − center) and its energy
// |x − center|²: one rule for the CPU and the GPU (host and device code).

#include "core/Rounding.h"  // HYPERSTREAM_HOST_DEVICE

#include <cmath>

namespace hyperstream {

enum class SearchRule {
  Residual,  // |x − center|² − |z|²: the energy outside W's columns (orthonormal); ATGP
  Norm,      // |z|²
  Linear,    // |constant[s] + coefficients[s]·z| for each slot s; VCA, N-FINDR
  Ratio,     // |z0 / z1| (pixels with z1 = 0 skipped); VCA's projective projection
};

// A search's rule with its numbers (pointers into host or device memory).
struct ScoreRule {
  SearchRule rule = SearchRule::Residual;
  int columns = 0;
  int scores = 1;                        // per pixel: Linear's slots, else 1
  const double* constants = nullptr;     // Linear: per slot
  const double* coefficients = nullptr;  // Linear: slots x columns
};

// Slot `slot`'s score, >= 0; -1 where the pixel has none (Ratio with z1 = 0).
HYPERSTREAM_HOST_DEVICE inline double pixelScore(const ScoreRule& r, int slot, const double* z,
                                                 double energy) {
  const int k = r.columns;
  switch (r.rule) {
    case SearchRule::Residual: {
      double projected = 0;
      for (int c = 0; c < k; ++c) projected += z[c] * z[c];
      return fmax(0.0, energy - projected);
    }
    case SearchRule::Norm: {
      double norm = 0;
      for (int c = 0; c < k; ++c) norm += z[c] * z[c];
      return norm;
    }
    case SearchRule::Linear: {
      double value = r.constants[slot];
      for (int c = 0; c < k; ++c) value += r.coefficients[slot * k + c] * z[c];
      return fabs(value);
    }
    case SearchRule::Ratio:
      return z[1] != 0 ? fabs(z[0] / z[1]) : -1.0;
  }
  return -1.0;
}

}  // namespace hyperstream
