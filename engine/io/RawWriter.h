#pragma once
// Pixel-interleaved strips written straight into an uncompressed output file where its raw
// layout puts them (the inverse of BandRuns). GDAL creates the file and places its blocks; the
// samples then go in with VSIFWriteL, past GDAL's block cache and its sample-by-sample copy
// between interleavings. A pixel-interleaved file (GeoTIFF INTERLEAVE=PIXEL, ENVI BIP) takes a
// strip as it is, a line-interleaved one (ENVI BIL) each row transposed, a band-sequential one
// (GeoTIFF INTERLEAVE=BAND, ENVI BSQ) a few rows at a time transposed into runs of each band.

#include "core/Feedback.h"

#include <gdal_priv.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hyperstream {

class RawWriter {
 public:
  // Null when `dataset`'s file has no raw layout of `type` in this machine's byte order without
  // gaps between samples (compressed, tiled or sparse files; blocks GDAL has not placed yet).
  // `name` is the file as errors call it.
  static std::unique_ptr<RawWriter> open(GDALDataset& dataset, GDALDataType type,
                                         const std::string& name);
  ~RawWriter();
  RawWriter(const RawWriter&) = delete;
  RawWriter& operator=(const RawWriter&) = delete;

  // Rows [row0, row0 + rows) of every band from a pixel-interleaved strip. Throws
  // Error("OUTPUT") when the file does not take them (disk full), Canceled between parts.
  void write(int64_t row0, int64_t rows, const unsigned char* strip, const Feedback& feedback);
  // Hands what is buffered to the file; throws Error("OUTPUT") where it does not take it.
  void flush();
  // Closes the file; throws Error("OUTPUT") when its last bytes cannot be written.
  void close();

 private:
  enum class Order { Pixel, Line, Band };
  RawWriter(VSILFILE* file, std::string name, Order order, const GDALDataset::RawBinaryLayout& l,
            int64_t width, int bands, int sampleBytes);
  void writeBytes(uint64_t offset, const unsigned char* data, int64_t bytes, int64_t row0,
                  int64_t rows);
  void writePart(int64_t row0, int64_t rows, const unsigned char* strip);

  VSILFILE* file_;
  std::string name_;
  Order order_;
  uint64_t imageOffset_;
  int64_t lineOffset_;
  int64_t bandOffset_;
  int64_t width_;
  int bands_;
  int sampleBytes_;
  std::vector<unsigned char> scratch_;  // a part in the file's interleaving
};

}  // namespace hyperstream
