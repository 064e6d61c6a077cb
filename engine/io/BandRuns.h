#pragma once
// Band-major strips read straight from an uncompressed band-interleaved file. Each band's rows of
// a strip lie in the file as one or a few runs of bytes (a GeoTIFF's strips, a raw file's band),
// which VSIFReadL copies into their place in the strip: no gather, no block cache, no map, so a
// pass costs what the page cache costs.

#include <gdal_priv.h>

#include <cstdint>
#include <memory>

namespace hyperstream {

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

}  // namespace hyperstream
