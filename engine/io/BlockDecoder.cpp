#include "io/BlockDecoder.h"

#include "core/Error.h"

#include <malloc.h>

#include <algorithm>
#include <cstring>
#include <exception>

namespace hyperstream {

namespace {

constexpr int64_t kLeastBatchBytes = 4ll << 20;

int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

BlockDecoder::BlockDecoder(const RasterInfo& raster, std::vector<int> bands, int parallel,
                           int64_t overlapRows, Interleave interleave)
    : raster_(raster),
      bands_(std::move(bands)),
      blockHeight_(std::clamp<int64_t>(raster.blockHeight, 1, raster.height)),
      rowBytes_(raster.width * static_cast<int64_t>(bands_.size()) * typeSize(raster.type)),
      batchRows_(batchRows(raster, rowBytes_, parallel)),
      overlapRows_(overlapRows),
      interleave_(interleave),
      capacityRows_(batchRows_ + overlapRows),
      bandRowBytes_(raster.width * typeSize(raster.type)),
      rows_(static_cast<size_t>(capacityRows_ * rowBytes_)),
      handles_(static_cast<size_t>(std::max(1, parallel))),
      pool_(std::make_unique<QThreadPool>()) {
  pool_->setMaxThreadCount(std::max(1, parallel - 1));
}

BlockDecoder::~BlockDecoder() {
  pool_->waitForDone();
}

int64_t BlockDecoder::batchRows(const RasterInfo& raster, int64_t rowBytes, int parallel) {
  const int64_t blockHeight = std::clamp<int64_t>(raster.blockHeight, 1, raster.height);
  const int64_t across =
      ceilDiv(raster.width, std::clamp<int64_t>(raster.blockWidth, 1, raster.width));
  const int64_t blockRows = std::max(ceilDiv(std::max(1, parallel), across),
                                     ceilDiv(kLeastBatchBytes, blockHeight * rowBytes));
  return std::min(raster.height, blockRows * blockHeight);
}

int64_t BlockDecoder::memoryBytes(const RasterInfo& raster, int bands, int parallel,
                                  int64_t overlapRows) {
  const int64_t rowBytes = raster.width * bands * typeSize(raster.type);
  const int64_t blockBytes = std::min<int64_t>(raster.blockWidth, raster.width) *
                             std::min<int64_t>(raster.blockHeight, raster.height) * bands *
                             typeSize(raster.type);
  // A block in GDAL's cache and, at most as large, its compressed bytes, per thread.
  return (batchRows(raster, rowBytes, parallel) + overlapRows) * rowBytes +
         2 * blockBytes * std::max(1, parallel);
}

void BlockDecoder::read(int64_t row0, int64_t rows, void* buffer) {
  if (row0 < keptFrom_ || row0 > keptTo_) keptFrom_ = keptTo_ = row0 - row0 % blockHeight_;
  auto* out = static_cast<unsigned char*>(buffer);
  const auto bands = static_cast<int64_t>(bands_.size());
  for (int64_t row = row0; row < row0 + rows;) {
    if (row >= keptTo_) {
      decodeBatch(keptTo_);
      continue;
    }
    const int64_t count = std::min(row0 + rows, keptTo_) - row;
    if (interleave_ == Interleave::Pixel) {
      std::memcpy(out + (row - row0) * rowBytes_, rows_.data() + (row - keptFrom_) * rowBytes_,
                  static_cast<size_t>(count * rowBytes_));
    } else {
      for (int64_t b = 0; b < bands; ++b)
        std::memcpy(out + (b * rows + row - row0) * bandRowBytes_,
                    rows_.data() + (b * capacityRows_ + row - keptFrom_) * bandRowBytes_,
                    static_cast<size_t>(count * bandRowBytes_));
    }
    row += count;
  }
}

void BlockDecoder::keepRows(int64_t from, int64_t count) {
  if (interleave_ == Interleave::Pixel) {
    std::memmove(rows_.data(), rows_.data() + from * rowBytes_,
                 static_cast<size_t>(count * rowBytes_));
    return;
  }
  for (size_t b = 0; b < bands_.size(); ++b) {
    unsigned char* band = rows_.data() + static_cast<int64_t>(b) * capacityRows_ * bandRowBytes_;
    std::memmove(band, band + from * bandRowBytes_, static_cast<size_t>(count * bandRowBytes_));
  }
}

// Keeps the last overlapRows_ rows, then decompresses the batch of block rows from `row0` (a
// block boundary) behind them, its blocks shared out between the threads in order.
void BlockDecoder::decodeBatch(int64_t row0) {
  const int64_t keep = std::min(overlapRows_, keptTo_ - keptFrom_);
  keepRows(keptTo_ - keep - keptFrom_, keep);
  keptFrom_ = keptTo_ - keep;
  const int64_t end = std::min(raster_.height, row0 + batchRows_);
  const std::vector<Block> blocks = blocksOf(raster_, row0, end);
  const auto threads = static_cast<int64_t>(std::min(handles_.size(), blocks.size()));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
  auto share = [&](int64_t i) {
    const auto first = blocks.begin() + static_cast<ptrdiff_t>(blocks.size() * i / threads);
    const auto last = blocks.begin() + static_cast<ptrdiff_t>(blocks.size() * (i + 1) / threads);
    try {
      decodeBlocks(static_cast<size_t>(i), std::vector<Block>(first, last), row0 - keep);
    } catch (...) {
      errors[static_cast<size_t>(i)] = std::current_exception();
    }
  };
  for (int64_t i = 1; i < threads; ++i) pool_->start([&share, i] { share(i); });
  share(0);
  pool_->waitForDone();
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
  keptTo_ = end;
  // GDAL's copies of the blocks, freed, go back to the system (the threads' arenas kept them).
  malloc_trim(0);
}

// Each block straight into its place among the kept rows (whose first row is `firstRow`).
void BlockDecoder::decodeBlocks(size_t handle, const std::vector<Block>& blocks, int64_t firstRow) {
  if (!handles_[handle]) handles_[handle] = openRaster(raster_.path, "INPUT");
  const int64_t size = typeSize(raster_.type);
  const int64_t pixelBytes = static_cast<int64_t>(bands_.size()) * size;
  const bool byBand = interleave_ == Interleave::Band;
  const BufferSpacing spacing =
      byBand ? BufferSpacing{size, bandRowBytes_, capacityRows_ * bandRowBytes_}
             : BufferSpacing{pixelBytes, rowBytes_, size};
  for (const Block& block : blocks)
    decodeBlock(*handles_[handle], bands_, raster_.type, block,
                rows_.data() + (block.y0 - firstRow) * spacing.line + block.x0 * spacing.pixel,
                spacing);
}

std::vector<Block> blocksOf(const RasterInfo& raster, int64_t row0, int64_t end) {
  const int64_t blockWidth = std::clamp<int64_t>(raster.blockWidth, 1, raster.width);
  const int64_t blockHeight = std::clamp<int64_t>(raster.blockHeight, 1, raster.height);
  std::vector<Block> blocks;
  for (int64_t y = row0; y < end; y += blockHeight)
    for (int64_t x = 0; x < raster.width; x += blockWidth)
      blocks.push_back(
          {x, y, std::min(blockWidth, raster.width - x), std::min(blockHeight, end - y)});
  return blocks;
}

void decodeBlock(GDALDataset& dataset, const std::vector<int>& bands, GDALDataType type,
                 const Block& block, unsigned char* target, const BufferSpacing& spacing) {
  QuietGdalErrors quiet;
  CPLErrorReset();
  const CPLErr status =
      dataset.RasterIO(GF_Read, static_cast<int>(block.x0), static_cast<int>(block.y0),
                       static_cast<int>(block.width), static_cast<int>(block.height), target,
                       static_cast<int>(block.width), static_cast<int>(block.height), type,
                       static_cast<int>(bands.size()), const_cast<int*>(bands.data()),
                       spacing.pixel, spacing.line, spacing.band, nullptr);
  dataset.FlushCache(false);
  if (status == CE_None) return;
  const std::string what =
      "rows " + std::to_string(block.y0 + 1) + "-" + std::to_string(block.y0 + block.height) +
      ", columns " + std::to_string(block.x0 + 1) + "-" + std::to_string(block.x0 + block.width) +
      " of '" + dataset.GetDescription() + "'";
  if (quiet.outOfMemory()) throw outOfMemory("while reading " + what);
  const char* message = CPLGetLastErrorMsg();
  throw Error("INPUT", "cannot read " + what + " (file damaged or truncated?)" +
                           (message && *message ? std::string(": ") + message : ""));
}

}  // namespace hyperstream
