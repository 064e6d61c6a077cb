#pragma once
// The strips the unmixing jobs hand their kernels: rows of the input, pixel-interleaved or (from a
// band-interleaved file, to kernels that take them) band-major, in groups of whole rows.

#include "io/Raster.h"
#include "pca/PcaKernels.h"
#include "run/Pipeline.h"

namespace hyperstream {

inline StripView jobStrip(const JobInput& input, const StripRange& range, const void* data,
                          int64_t groupRows, bool bandMajor) {
  StripView view;
  view.data = data;
  view.type = input.sampleType;
  view.pixels = range.rows * input.info.width;
  view.bands = static_cast<int>(input.bands.size());
  view.nodata = input.nodata.data();
  view.groupPixels = groupRows * input.info.width;
  view.firstPixel = range.row0 * input.info.width;
  view.bandMajor = bandMajor;
  return view;
}

// Whether a job reads band-major strips for `kernels`: from a band-interleaved or compressed file
// (GDAL keeps a decompressed block per band), where the kernels take them.
inline bool readsBandMajor(const RasterInfo& source, bool kernelsTakeThem) {
  return kernelsTakeThem && (source.bandInterleaved || source.compressed);
}

}  // namespace hyperstream
