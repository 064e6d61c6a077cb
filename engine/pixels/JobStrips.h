#pragma once
// The strips the unmixing jobs hand their kernels: rows of the input, pixel-interleaved or (from a
// band-interleaved file, to kernels that take them) band-major, in groups of whole rows.

#include "core/Feedback.h"
#include "io/DecompressedCopy.h"
#include "io/Raster.h"
#include "projection/PcaKernels.h"
#include "run/Pipeline.h"
#include "run/StripPlan.h"

#include <memory>
#include <string>
#include <vector>

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

// A one-pass job's input as it streams (abundances, spectral angles): strips of whole groups of
// rows that overlap computing with writing, a decompressed copy where that pays, and the reader
// of whichever is read.
struct StreamedInput {
  StripPlan plan;
  int64_t groupRows = 1;
  std::unique_ptr<DecompressedCopy> copy;
  std::unique_ptr<StripReader> reader;

  // What is read: the input, or its decompressed copy.
  const RasterInfo& source(const RasterInfo& input) const { return copy ? copy->info() : input; }
  // Strip `range` into `buffer`, band-major or pixel-interleaved; returns the buffer.
  const void* read(const StripRange& range, unsigned char* buffer, bool bandMajor) const {
    if (bandMajor)
      reader->readBandMajor(range.row0, range.rows, buffer);
    else
      reader->read(range.row0, range.rows, buffer);
    return buffer;
  }
};

// The plan for rows [firstRow, firstRow + rows) of `input`'s `bands` (`sharing` workers reading
// the image, each its rows), with `inputBuffers` buffers of input rows and `outputBuffers` of
// `outputRowBytes` each, within `ramBytes`; `output` is where a decompressed copy would go.
struct OnePassShape {
  int64_t firstRow = 0, rows = 0;
  int sharing = 1;
  int inputBuffers = 3, outputBuffers = 2;
  int64_t outputRowBytes = 0;
  int64_t requestedRows = 0;  // the user's strip height (tests), 0 to plan
};
StreamedInput streamOnePass(const RasterInfo& input, const std::vector<int>& bands,
                            const OnePassShape& shape, int64_t ramBytes, const std::string& output,
                            Feedback& feedback);

}  // namespace hyperstream
