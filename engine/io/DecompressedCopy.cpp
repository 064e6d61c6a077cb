#include "io/DecompressedCopy.h"

#include "core/Error.h"
#include "io/BlockDecoder.h"

#include <malloc.h>

#include <QFileInfo>
#include <QThreadPool>

#include <atomic>
#include <exception>
#include <numeric>

namespace hyperstream {

namespace {

// A file opened for writing through GDAL's virtual file layer, closed on destruction.
struct VsiFile {
  explicit VsiFile(const std::string& path) : file(VSIFOpenL(path.c_str(), "r+b")) {
    if (!file) throw Error("OUTPUT", "cannot open '" + path + "' for writing");
  }
  ~VsiFile() { VSIFCloseL(file); }
  VsiFile(const VsiFile&) = delete;
  VsiFile& operator=(const VsiFile&) = delete;
  VSILFILE* file;
};

}  // namespace

int64_t DecompressedCopy::blockBytes(const RasterInfo& input, int bands) {
  return std::min<int64_t>(input.blockWidth, input.width) *
         std::min<int64_t>(input.blockHeight, input.height) * (input.bandInterleaved ? 1 : bands) *
         typeSize(input.type);
}

bool DecompressedCopy::fits(const std::string& besides, int64_t bytes) {
  const std::string folder =
      QFileInfo(QString::fromStdString(besides)).absolutePath().toStdString();
  const GIntBig available = VSIGetDiskFreeSpace(folder.c_str());  // statvfs; -1 where unknown
  return available < 0 || available > bytes + bytes / 10;
}

DecompressedCopy::DecompressedCopy(const RasterInfo& input, const std::vector<int>& bands,
                                   const std::string& besides, int threads, Feedback& feedback)
    : bands_(bands.size()) {
  std::iota(bands_.begin(), bands_.end(), 1);
  GDALDriver* envi = GetGDALDriverManager()->GetDriverByName("ENVI");
  raster_ = std::make_unique<PendingRaster>(
      besides + ".input",
      RasterFormat{envi, {input.bandInterleaved ? "INTERLEAVE=BSQ" : "INTERLEAVE=BIP"}},
      input.width, input.height, static_cast<int>(bands.size()), input.type);
  raster_->reopen();  // writes the header
  decompress(input, bands, threads, feedback);
  DatasetPtr copy = openRaster(raster_->temporaryPath(), "INPUT");
  info_ = describeRaster(*copy, raster_->temporaryPath());
}

// Blocks (of one band each, from a band-interleaved input) are dealt out in turn; each thread
// writes its blocks' rows where the raw layout puts them (disjoint bytes, so the threads never
// touch the same ones).
void DecompressedCopy::decompress(const RasterInfo& input, const std::vector<int>& bands,
                                  int threads, Feedback& feedback) {
  GDALDataset::RawBinaryLayout layout;
  if (!raster_->dataset().GetRawBinaryLayout(layout))
    throw Error("OUTPUT", "GDAL gives no raw layout for the copy of the input");
  const std::vector<Block> blocks = blocksOf(input, 0, input.height);
  const auto bandCount = static_cast<int64_t>(bands.size());
  const int64_t perBlock = input.bandInterleaved ? bandCount : 1;  // decoded one at a time
  const int64_t pixelBytes = (input.bandInterleaved ? 1 : bandCount) * typeSize(input.type);
  const auto units = static_cast<int64_t>(blocks.size()) * perBlock;
  std::atomic<bool> canceled{false};
  auto work = [&](int thread) {
    DatasetPtr dataset = openRaster(input.path, "INPUT");
    VsiFile out(layout.osRawFilename);
    std::vector<unsigned char> buffer(
        static_cast<size_t>(blockBytes(input, static_cast<int>(bandCount))));
    for (int64_t unit = thread; unit < units && !canceled; unit += threads) {
      if (thread == 0 && feedback.isCanceled()) canceled = true;
      const Block& block = blocks[static_cast<size_t>(unit / perBlock)];
      const int64_t band = input.bandInterleaved ? unit % perBlock : 0;
      const std::vector<int> decoded =
          input.bandInterleaved ? std::vector<int>{bands[band]} : bands;
      decodeBlock(*dataset, decoded, input.type, block, buffer.data(),
                  {pixelBytes, block.width * pixelBytes, typeSize(input.type)});
      for (int64_t row = 0; row < block.height; ++row) {
        const auto offset = static_cast<vsi_l_offset>(
            layout.nImageOffset + band * layout.nBandOffset +
            (block.y0 + row) * layout.nLineOffset + block.x0 * layout.nPixelOffset);
        const auto bytes = static_cast<size_t>(block.width * pixelBytes);
        if (VSIFSeekL(out.file, offset, SEEK_SET) != 0 ||
            VSIFWriteL(buffer.data() + row * block.width * pixelBytes, 1, bytes, out.file) != bytes)
          throw Error("OUTPUT", "cannot write the copy of the input in '" + layout.osRawFilename +
                                    "' (disk full?)");
      }
      malloc_trim(0);  // as BlockDecoder does after each row of blocks
    }
  };
  QThreadPool pool;
  pool.setMaxThreadCount(std::max(1, threads - 1));
  std::vector<std::exception_ptr> errors(threads);
  for (int t = 1; t < threads; ++t)
    pool.start([&, t] {
      try {
        work(t);
      } catch (...) {
        errors[t] = std::current_exception();
        canceled = true;
      }
    });
  try {
    work(0);
  } catch (...) {
    errors[0] = std::current_exception();
    canceled = true;
  }
  pool.waitForDone();
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
  if (feedback.isCanceled()) throw Canceled();
}

}  // namespace hyperstream
