#pragma once
// What every kernel is handed: a strip of the image in the file's own type, and the whole job's
// shape.

#include "core/Samples.h"

#include <cstdint>

namespace hyperstream {

// A strip of values in the file's own type: pixel-interleaved (pixel p, band b at p*bands+b) or,
// from a band-interleaved file when the kernels take it, band-major (at b*pixels+p).
struct StripView {
  const void* data = nullptr;
  SampleType type = SampleType::Float64;
  int64_t pixels = 0;
  int bands = 0;
  // Per band nodata value, NaN where the band has none. A pixel is valid when every band is
  // finite and differs from its nodata value.
  const double* nodata = nullptr;
  // Pixels per group (a fixed number of whole image rows; the last group of the image may be
  // shorter). Strips hold whole groups and kernels work group by group, so that results do not
  // depend on how the image was cut into strips.
  int64_t groupPixels = 0;
  // Index of the strip's first pixel in the image (row0 x width).
  int64_t firstPixel = 0;
  bool bandMajor = false;  // see above

  SampleLayout layout() const {
    return bandMajor ? SampleLayout::bandMajor(pixels) : SampleLayout::pixelInterleaved(bands);
  }
};

// The whole job's shape, told to the kernels before the first pass.
struct CubeLayout {
  int64_t pixels = 0;  // of the image
  int bands = 0;
  SampleType type = SampleType::Float64;
  int64_t maxStripPixels = 0;
  int maxComponents = 0;   // at most this many components are projected
  bool bandMajor = false;  // strips come band-major (for kernels that take them)
};

}  // namespace hyperstream
