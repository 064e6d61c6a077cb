#pragma once
// Which neighbour MNF pairs each pixel with to estimate the noise.

#include <string>

namespace hyperstream {

// The pair of pixel (r, c) is x(r, c) - x(r + dRow, c + dCol): lower right (1, 1), lower left
// (1, -1), right (0, 1), lower (1, 0), as Spectral Python's noise_from_diffs pairs them.
enum class NoiseDirection { LowerRight, LowerLeft, Right, Lower };
std::string noiseDirectionName(NoiseDirection direction);  // "lowerright", ...
// Throws Error("NOISE_DIRECTION") for anything but the four names.
NoiseDirection parseNoiseDirection(const std::string& name);
int rowStep(NoiseDirection direction);
int columnStep(NoiseDirection direction);

}  // namespace hyperstream
