#include "io/RawWriter.h"

#include "core/Error.h"
#include "io/BandRuns.h"
#include "io/Raster.h"

#include <algorithm>

namespace hyperstream {

namespace {

// Rows written at a time: a cancel is not kept waiting for a strip of hundreds of megabytes, and
// a band-sequential file's transposed part stays small.
constexpr int64_t kPartBytes = 8ll << 20;

// Bytes handed to the file per call, coreutils' buffer size. The kernel gives a write as large
// as its call page-cache folios up to 2 MiB, and where the machine's freed memory goes back to
// its host (a VM with free page reporting), every large folio comes back through a fault on the
// host: on this project's VM, 2 GB written in 8 MiB calls took 2.2-4.8 s, in 128 KiB calls
// 0.5-1.0 s (as `cp`); in memory kept by the guest (tmpfs) both took the same.
constexpr size_t kWriteCallBytes = size_t{128} << 10;

}  // namespace

std::unique_ptr<RawWriter> RawWriter::open(GDALDataset& dataset, GDALDataType type,
                                           const std::string& name) {
  const std::optional<GDALDataset::RawBinaryLayout> found = nativeRawLayout(dataset, type);
  if (!found) return nullptr;
  const GDALDataset::RawBinaryLayout& layout = *found;
  const int bands = dataset.GetRasterCount();
  const int64_t width = dataset.GetRasterXSize();
  const int64_t height = dataset.GetRasterYSize();
  const int size = GDALGetDataTypeSizeBytes(type);
  const int64_t bandRow = width * size;  // one band's row
  Order order;
  if (layout.nPixelOffset == int64_t{bands} * size && layout.nLineOffset == bands * bandRow &&
      (bands == 1 || layout.nBandOffset == size))
    order = Order::Pixel;
  else if (layout.nPixelOffset == size && layout.nBandOffset == bandRow &&
           layout.nLineOffset == bands * bandRow)
    order = Order::Line;
  else if (layout.nPixelOffset == size && layout.nLineOffset == bandRow &&
           layout.nBandOffset >= height * bandRow)
    order = Order::Band;
  else
    return nullptr;
  VSILFILE* file = VSIFOpenL(layout.osRawFilename.c_str(), "r+b");
  if (!file) return nullptr;
  return std::unique_ptr<RawWriter>(new RawWriter(file, name, order, layout, width, bands, size));
}

RawWriter::RawWriter(VSILFILE* file, std::string name, Order order,
                     const GDALDataset::RawBinaryLayout& l, int64_t width, int bands,
                     int sampleBytes)
    : file_(file),
      name_(std::move(name)),
      order_(order),
      imageOffset_(l.nImageOffset),
      lineOffset_(l.nLineOffset),
      bandOffset_(l.nBandOffset),
      width_(width),
      bands_(bands),
      sampleBytes_(sampleBytes) {}

RawWriter::~RawWriter() {
  if (file_) VSIFCloseL(file_);
}

void RawWriter::close() {
  VSILFILE* file = file_;
  file_ = nullptr;
  if (file && VSIFCloseL(file) != 0)
    throw Error("OUTPUT", "cannot finish writing '" + name_ + "' (disk full?)");
}

void RawWriter::flush() {
  if (VSIFFlushL(file_) != 0) throw Error("OUTPUT", "cannot write to '" + name_ + "' (disk full?)");
}

void RawWriter::write(int64_t row0, int64_t rows, const unsigned char* strip,
                      const Feedback& feedback) {
  const int64_t lineBytes = width_ * bands_ * sampleBytes_;
  const int64_t partRows = std::max<int64_t>(1, kPartBytes / lineBytes);
  for (int64_t row = 0; row < rows; row += partRows) {
    if (feedback.isCanceled()) throw Canceled();
    writePart(row0 + row, std::min(partRows, rows - row), strip + row * lineBytes);
  }
}

void RawWriter::writePart(int64_t row0, int64_t rows, const unsigned char* strip) {
  const int64_t bandRow = width_ * sampleBytes_;
  const int64_t lineBytes = bandRow * bands_;
  const uint64_t start = imageOffset_ + static_cast<uint64_t>(row0 * lineOffset_);
  switch (order_) {
    case Order::Pixel:
      writeBytes(start, strip, rows * lineBytes, row0, rows);
      return;
    case Order::Line:
      scratch_.resize(static_cast<size_t>(rows * lineBytes));
      for (int64_t r = 0; r < rows; ++r)
        transposeSamples(strip + r * lineBytes, width_, bands_, sampleBytes_,
                         scratch_.data() + r * lineBytes);
      writeBytes(start, scratch_.data(), rows * lineBytes, row0, rows);
      return;
    case Order::Band:
      scratch_.resize(static_cast<size_t>(rows * lineBytes));
      transposeSamples(strip, rows * width_, bands_, sampleBytes_, scratch_.data());
      for (int b = 0; b < bands_; ++b)
        writeBytes(start + static_cast<uint64_t>(b * bandOffset_),
                   scratch_.data() + b * rows * bandRow, rows * bandRow, row0, rows);
      return;
  }
}

void RawWriter::writeBytes(uint64_t offset, const unsigned char* data, int64_t bytes, int64_t row0,
                           int64_t rows) {
  bool written = VSIFSeekL(file_, offset, SEEK_SET) == 0;
  for (size_t at = 0; written && at < static_cast<size_t>(bytes); at += kWriteCallBytes) {
    const size_t count = std::min(kWriteCallBytes, static_cast<size_t>(bytes) - at);
    written = VSIFWriteL(data + at, 1, count, file_) == count;
  }
  if (!written)
    throw Error("OUTPUT", "cannot write rows " + std::to_string(row0 + 1) + "-" +
                              std::to_string(row0 + rows) + " of '" + name_ + "' (disk full?)");
}

}  // namespace hyperstream
