#pragma once
// A compressed input decompressed once into a raw file beside the output, for jobs that read it
// more than once.

#include "core/Feedback.h"
#include "io/PendingRaster.h"
#include "io/Raster.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hyperstream {

// When a job streams a compressed file (its cube does not stay in memory), every pass would
// decompress every block again. Instead each block is decompressed once, by one of `threads`
// threads, into a raw file (ENVI, the selected bands only) in a hidden folder beside `besides`
// (the job's output), which the passes then read as a plain file: pixel-interleaved (BIP) from a
// pixel-interleaved input, band-interleaved (BSQ) from a band-interleaved one, whose blocks are
// then taken one band at a time. The copy is removed with this object, and by the signal handlers
// like an unfinished output. Memory: a block per thread, and GDAL's two copies of it while it
// decompresses (decodingBytes).
class DecompressedCopy {
 public:
  DecompressedCopy(const RasterInfo& input, const std::vector<int>& bands,
                   const std::string& besides, int threads, Feedback& feedback);
  const RasterInfo& info() const { return info_; }
  const std::vector<int>& bands() const { return bands_; }  // 1 to the selected bands' count

  // Bytes of one block as the copy decompresses it: of every selected band (pixel-interleaved
  // input) or of one (band-interleaved).
  static int64_t blockBytes(const RasterInfo& input, int bands);
  // What one thread holds while it decompresses a block: its buffer, GDAL's cached block and
  // GDAL's decompression buffer.
  static int64_t decodingBytes(const RasterInfo& input, int bands) {
    return 3 * blockBytes(input, bands);
  }
  // Whether the folder of `besides` has room for `bytes` and a tenth more (true where the free
  // space is unknown: a full disk then fails the write, with an error that says so).
  static bool fits(const std::string& besides, int64_t bytes);

 private:
  void decompress(const RasterInfo& input, const std::vector<int>& bands, int threads,
                  Feedback& feedback);

  std::unique_ptr<PendingRaster> raster_;
  RasterInfo info_;
  std::vector<int> bands_;
};

}  // namespace hyperstream
