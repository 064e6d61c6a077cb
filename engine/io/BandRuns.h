#pragma once
// Band-major strips read straight from an uncompressed band-interleaved file. Each band's rows of
// a strip lie in the file as one or a few runs of bytes (a GeoTIFF's strips, a raw file's band),
// which VSIFReadL copies into their place in the strip: no gather, no block cache, no map, so a
// pass costs what the page cache costs.

#include <gdal_priv.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace hyperstream {

// The raw layout GDAL gives `dataset`'s file (GetRawBinaryLayout) where its samples are `type` in
// this machine's byte order and every block has its place; nullopt otherwise. GDAL 3.6 gives a
// GeoTIFF none of whose blocks has a place (sparse) a layout at offset 0, its header: a GeoTIFF
// whose first or last block has no offset has none here.
std::optional<GDALDataset::RawBinaryLayout> nativeRawLayout(GDALDataset& dataset,
                                                            GDALDataType type);

class BandRuns {
 public:
  // Null when `dataset`'s bands cannot be read as runs of `type`: compressed or tiled, another
  // byte order or sample type, pixels of a band not side by side.
  static std::unique_ptr<BandRuns> open(GDALDataset& dataset, GDALDataType type);
  ~BandRuns();
  BandRuns(const BandRuns&) = delete;
  BandRuns& operator=(const BandRuns&) = delete;

  // Rows [row0, row0 + rows) of the 1-based `band` into `buffer`, one after the other. Returns
  // false, having read nothing, where the file has no bytes for some row (a sparse GeoTIFF, whose
  // missing blocks GDAL fills); throws Error("INPUT") when the file is shorter than it says.
  bool read(int band, int64_t row0, int64_t rows, unsigned char* buffer);

 private:
  BandRuns(GDALDataset& dataset, VSILFILE* file, int64_t rowBytes);
  // The file offset of the row's first byte; 0 where the file has none.
  uint64_t rowOffset(int band, int64_t row) const;

  GDALDataset& dataset_;
  VSILFILE* file_;
  int64_t rowBytes_;
  // A raw layout (GDALDataset::GetRawBinaryLayout: ENVI and other raw files, contiguous GeoTIFFs),
  // else the GeoTIFF's strips of blockRows_ rows (their offsets from GDAL's TIFF metadata).
  bool raw_ = false;
  uint64_t imageOffset_ = 0;
  int64_t lineOffset_ = 0;
  int64_t bandOffset_ = 0;
  int blockRows_ = 1;
};

// Pixel-interleaved strips read straight from an uncompressed pixel-interleaved file (a GeoTIFF
// INTERLEAVE=PIXEL, ENVI BIP) of which every band is read, in order: a strip's rows are then one
// run of the file, which VSIFReadL copies into the buffer as it is. Threads reading their rows
// with handles of their own copy at what memory gives (GDAL's block cache, or its map of the
// file, costs a copy or a page fault per page and does not scale with threads).
class PixelRuns {
 public:
  // Null when the file is not such a file, or `bands` (1-based) are not all its bands in order.
  static std::unique_ptr<PixelRuns> open(GDALDataset& dataset, GDALDataType type,
                                         const std::vector<int>& bands);
  ~PixelRuns();
  PixelRuns(const PixelRuns&) = delete;
  PixelRuns& operator=(const PixelRuns&) = delete;

  // Rows [row0, row0 + rows) into `buffer`; throws Error("INPUT") when the file is shorter than
  // it says.
  void read(int64_t row0, int64_t rows, unsigned char* buffer);

 private:
  PixelRuns(GDALDataset& dataset, VSILFILE* file, uint64_t imageOffset, int64_t lineBytes);
  GDALDataset& dataset_;
  VSILFILE* file_;
  uint64_t imageOffset_;
  int64_t lineBytes_;
};

}  // namespace hyperstream
