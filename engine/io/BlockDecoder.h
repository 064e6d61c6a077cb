#pragma once
// Reads strips of a compressed raster so that each of its blocks is decompressed once per pass.

#include "io/Raster.h"

#include <QThreadPool>

#include <cstdint>
#include <memory>
#include <vector>

namespace hyperstream {

// One block of a raster (clipped to the image): columns [x0, x0 + width), rows [y0, y0 + height).
struct Block {
  int64_t x0, y0, width, height;
};

// The blocks of rows [row0, end) (block boundaries, or the image's end), row by row.
std::vector<Block> blocksOf(const RasterInfo& raster, int64_t row0, int64_t end);

// Where a buffer puts a sample, in bytes: RasterIO's pixel, line and band spacing.
struct BufferSpacing {
  int64_t pixel, line, band;
};

// Decompresses `block` of the 1-based `bands` into `target` (its first sample) in `type`, laid out
// by `spacing`; then drops it from GDAL's block cache. Throws Error("INPUT").
void decodeBlock(GDALDataset& dataset, const std::vector<int>& bands, GDALDataType type,
                 const Block& block, unsigned char* target, const BufferSpacing& spacing);

// A compressed file is stored in blocks (tiles, or strips of rows) that GDAL decompresses whole.
// Reading image strips that cut across blocks decompresses each block once per strip that
// touches it, and threads splitting a strip by rows decompress the same blocks twice. This
// decoder instead decompresses whole rows of blocks ("batches"), each block by one thread (a
// GDAL handle per thread), into rows it keeps, and copies strips out of them; the last
// `overlapRows` rows of a batch stay for the next strip (SPP's halo). GDAL's block cache holds
// only the blocks being decompressed: each thread flushes its handle after every block. The rows
// are kept, and strips given, pixel-interleaved or band-major (`interleave`); band-major rows of a
// pixel-interleaved file cost GDAL one strided copy instead of two (its block cache holds each
// band's block apart).
class BlockDecoder {
 public:
  BlockDecoder(const RasterInfo& raster, std::vector<int> bands, int parallel, int64_t overlapRows,
               Interleave interleave);
  ~BlockDecoder();
  BlockDecoder(const BlockDecoder&) = delete;
  BlockDecoder& operator=(const BlockDecoder&) = delete;

  // Rows [row0, row0 + rows) of the selected bands into `buffer`, laid out as interleave() says.
  // Strips read in order decompress every block once; going back decompresses again.
  void read(int64_t row0, int64_t rows, void* buffer);
  Interleave interleave() const { return interleave_; }

  // What a decoder holds: the kept rows and, for each thread, one block of every band in GDAL's
  // block cache and in the decompressor.
  static int64_t memoryBytes(const RasterInfo& raster, int bands, int parallel,
                             int64_t overlapRows);
  // Rows decompressed at a time: a row of blocks, or several when blocks are short and few.
  static int64_t batchRows(const RasterInfo& raster, int64_t rowBytes, int parallel);

 private:
  void decodeBatch(int64_t row0);
  void decodeBlocks(size_t handle, const std::vector<Block>& blocks, int64_t row0);
  // Moves rows [from, from + count) of the kept rows to the start.
  void keepRows(int64_t from, int64_t count);

  RasterInfo raster_;
  std::vector<int> bands_;
  int64_t blockHeight_;
  int64_t rowBytes_;
  int64_t batchRows_;
  int64_t overlapRows_;
  Interleave interleave_;
  int64_t capacityRows_;             // rows rows_ holds
  int64_t bandRowBytes_;             // a row of one band
  std::vector<unsigned char> rows_;  // rows [keptFrom_, keptTo_), as interleave_ says
  int64_t keptFrom_ = 0, keptTo_ = 0;
  std::vector<DatasetPtr> handles_;
  std::unique_ptr<QThreadPool> pool_;
};

}  // namespace hyperstream
