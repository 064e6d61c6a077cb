#pragma once
// The strips the unmixing jobs hand their kernels: rows of the input, pixel-interleaved, in groups
// of whole rows.

#include "io/Raster.h"
#include "pca/PcaKernels.h"
#include "run/Pipeline.h"

namespace hyperstream {

inline StripView pixelStrip(const JobInput& input, const StripRange& range, const void* data,
                            int64_t groupRows) {
  StripView view;
  view.data = data;
  view.type = input.sampleType;
  view.pixels = range.rows * input.info.width;
  view.bands = static_cast<int>(input.bands.size());
  view.nodata = input.nodata.data();
  view.groupPixels = groupRows * input.info.width;
  view.firstPixel = range.row0 * input.info.width;
  return view;
}

}  // namespace hyperstream
