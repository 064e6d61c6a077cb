#include "io/BandRuns.h"

#include "core/Error.h"

#include <cpl_string.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace hyperstream {

namespace {

// Whether every band has `type` and the file stores it in this machine's byte order, a band's
// pixels side by side.
bool plainBands(GDALDataset& dataset, GDALDataType type) {
  for (int b = 1; b <= dataset.GetRasterCount(); ++b)
    if (dataset.GetRasterBand(b)->GetRasterDataType() != type) return false;
  const char* nbits = dataset.GetRasterBand(1)->GetMetadataItem("NBITS", "IMAGE_STRUCTURE");
  return !nbits || atoi(nbits) == GDALGetDataTypeSizeBits(type);
}

// A little-endian GeoTIFF ("II") of uncompressed band-interleaved strips as wide as the image.
bool tiffStrips(GDALDataset& dataset) {
  GDALDriver* driver = dataset.GetDriver();
  if (!driver || !EQUAL(driver->GetDescription(), "GTiff")) return false;
  const char* interleave = dataset.GetMetadataItem("INTERLEAVE", "IMAGE_STRUCTURE");
  const char* compression = dataset.GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE");
  int blockWidth = 0, blockHeight = 0;
  dataset.GetRasterBand(1)->GetBlockSize(&blockWidth, &blockHeight);
  if (!interleave || !EQUAL(interleave, "BAND") || compression ||
      blockWidth != dataset.GetRasterXSize())
    return false;
  char order[2] = {};
  VSILFILE* file = VSIFOpenL(dataset.GetDescription(), "rb");
  if (!file) return false;
  const bool read = VSIFReadL(order, 1, 2, file) == 2;
  VSIFCloseL(file);
  return read && order[0] == 'I' && order[1] == 'I' && CPL_IS_LSB;
}

// Whether a GeoTIFF's first and last blocks have their place in the file (true for other files).
bool blocksPlaced(GDALDataset& dataset) {
  GDALDriver* driver = dataset.GetDriver();  // none for a sensor's product
  if (!driver || !EQUAL(driver->GetDescription(), "GTiff")) return true;
  auto placed = [&](int band, int64_t blockRow) {
    const std::string key = "BLOCK_OFFSET_0_" + std::to_string(blockRow);
    const char* offset = dataset.GetRasterBand(band)->GetMetadataItem(key.c_str(), "TIFF");
    return offset && std::strtoull(offset, nullptr, 10) > 0;
  };
  int blockWidth = 0, blockHeight = 0;
  dataset.GetRasterBand(1)->GetBlockSize(&blockWidth, &blockHeight);
  const int64_t lastBlockRow = (dataset.GetRasterYSize() - 1) / std::max(1, blockHeight);
  return placed(1, 0) && placed(dataset.GetRasterCount(), lastBlockRow);
}

}  // namespace

std::optional<GDALDataset::RawBinaryLayout> nativeRawLayout(GDALDataset& dataset,
                                                            GDALDataType type) {
  GDALDataset::RawBinaryLayout layout;
  if (dataset.GetRasterCount() < 1 || !blocksPlaced(dataset) ||
      !dataset.GetRawBinaryLayout(layout) || layout.eDataType != type ||
      layout.bLittleEndianOrder != static_cast<bool>(CPL_IS_LSB))
    return std::nullopt;
  return layout;
}

std::unique_ptr<BandRuns> BandRuns::open(GDALDataset& dataset, GDALDataType type) {
  if (!plainBands(dataset, type)) return nullptr;
  const int64_t rowBytes =
      static_cast<int64_t>(dataset.GetRasterXSize()) * GDALGetDataTypeSizeBytes(type);
  const std::optional<GDALDataset::RawBinaryLayout> found = nativeRawLayout(dataset, type);
  const bool raw = found && found->nPixelOffset == GDALGetDataTypeSizeBytes(type) &&
                   found->eInterleaving != GDALDataset::RawBinaryLayout::Interleaving::BIP;
  const GDALDataset::RawBinaryLayout layout = raw ? *found : GDALDataset::RawBinaryLayout{};
  if (!raw && !tiffStrips(dataset)) return nullptr;
  const std::string path = raw ? layout.osRawFilename : std::string(dataset.GetDescription());
  VSILFILE* file = VSIFOpenL(path.c_str(), "rb");
  if (!file) return nullptr;
  std::unique_ptr<BandRuns> runs(new BandRuns(dataset, file, rowBytes));
  runs->raw_ = raw;
  if (raw) {
    runs->imageOffset_ = layout.nImageOffset;
    runs->lineOffset_ = layout.nLineOffset;
    runs->bandOffset_ = layout.nBandOffset;
  } else {
    int blockWidth = 0;
    dataset.GetRasterBand(1)->GetBlockSize(&blockWidth, &runs->blockRows_);
  }
  return runs;
}

BandRuns::BandRuns(GDALDataset& dataset, VSILFILE* file, int64_t rowBytes)
    : dataset_(dataset), file_(file), rowBytes_(rowBytes) {}

BandRuns::~BandRuns() {
  VSIFCloseL(file_);
}

uint64_t BandRuns::rowOffset(int band, int64_t row) const {
  if (raw_)
    return imageOffset_ + static_cast<uint64_t>((band - 1) * bandOffset_ + row * lineOffset_);
  const std::string key = "BLOCK_OFFSET_0_" + std::to_string(row / blockRows_);
  const char* offset = dataset_.GetRasterBand(band)->GetMetadataItem(key.c_str(), "TIFF");
  if (!offset) return 0;
  const uint64_t start = std::strtoull(offset, nullptr, 10);
  return start == 0 ? 0 : start + static_cast<uint64_t>((row % blockRows_) * rowBytes_);
}

bool BandRuns::read(int band, int64_t row0, int64_t rows, unsigned char* buffer) {
  // Each row's offset once (a GeoTIFF's from its strip), then runs of rows that follow each other.
  std::vector<uint64_t> offsets(rows);
  for (int64_t r = 0; r < rows; ++r) {
    offsets[r] = rowOffset(band, row0 + r);
    if (offsets[r] == 0) return false;
  }
  for (int64_t r = 0; r < rows;) {
    int64_t end = r + 1;
    while (end < rows && offsets[end] == offsets[end - 1] + static_cast<uint64_t>(rowBytes_)) ++end;
    const auto bytes = static_cast<size_t>((end - r) * rowBytes_);
    if (VSIFSeekL(file_, offsets[r], SEEK_SET) != 0 ||
        VSIFReadL(buffer + r * rowBytes_, 1, bytes, file_) != bytes)
      throw Error("INPUT", "cannot read rows " + std::to_string(row0 + r + 1) + "-" +
                               std::to_string(row0 + end) + " of band " + std::to_string(band) +
                               " of '" + dataset_.GetDescription() +
                               "' (file damaged or truncated?)");
    r = end;
  }
  return true;
}

std::unique_ptr<PixelRuns> PixelRuns::open(GDALDataset& dataset, GDALDataType type,
                                           const std::vector<int>& bands) {
  const int count = dataset.GetRasterCount();
  if (static_cast<int>(bands.size()) != count || !plainBands(dataset, type)) return nullptr;
  for (int b = 0; b < count; ++b)
    if (bands[b] != b + 1) return nullptr;
  const int size = GDALGetDataTypeSizeBytes(type);
  const int64_t lineBytes = static_cast<int64_t>(dataset.GetRasterXSize()) * count * size;
  const std::optional<GDALDataset::RawBinaryLayout> layout = nativeRawLayout(dataset, type);
  if (!layout || layout->nPixelOffset != int64_t{count} * size ||
      layout->nLineOffset != lineBytes || (count > 1 && layout->nBandOffset != size))
    return nullptr;
  VSILFILE* file = VSIFOpenL(layout->osRawFilename.c_str(), "rb");
  if (!file) return nullptr;
  return std::unique_ptr<PixelRuns>(new PixelRuns(dataset, file, layout->nImageOffset, lineBytes));
}

PixelRuns::PixelRuns(GDALDataset& dataset, VSILFILE* file, uint64_t imageOffset, int64_t lineBytes)
    : dataset_(dataset), file_(file), imageOffset_(imageOffset), lineBytes_(lineBytes) {}

PixelRuns::~PixelRuns() {
  VSIFCloseL(file_);
}

void PixelRuns::read(int64_t row0, int64_t rows, unsigned char* buffer) {
  const auto bytes = static_cast<size_t>(rows * lineBytes_);
  if (VSIFSeekL(file_, imageOffset_ + static_cast<uint64_t>(row0 * lineBytes_), SEEK_SET) != 0 ||
      VSIFReadL(buffer, 1, bytes, file_) != bytes)
    throw Error("INPUT", "cannot read rows " + std::to_string(row0 + 1) + "-" +
                             std::to_string(row0 + rows) + " of '" + dataset_.GetDescription() +
                             "' (file damaged or truncated?)");
}

}  // namespace hyperstream
