// Reading strips: RasterIO into the kernels' layouts (pixel- or band-interleaved), and
// StripReader's parallel, mapped or block-decoded reads of them (io/Raster.h).

#include "io/Raster.h"

#include "core/Error.h"
#include "core/Samples.h"
#include "io/BandRuns.h"
#include "io/BlockDecoder.h"

#include <cpl_string.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

namespace hyperstream {

namespace {

// When a band-interleaved file is read into a pixel-interleaved buffer, GDAL fills the buffer
// band by band: rows are read in windows whose buffer stays in the core's cache.
constexpr int64_t kCachedWindowBytes = 1 << 20;

}  // namespace

namespace {

// Rows [row0, row0 + rows) of the bands into `buffer` with RasterIO's spacing, `windowRows` rows
// per call; then drops the blocks GDAL cached.
void readWindows(GDALDataset& dataset, const std::vector<int>& bands, GDALDataType type,
                 int64_t row0, int64_t rows, int64_t windowRows, unsigned char* buffer,
                 GSpacing pixelSpace, GSpacing lineSpace, GSpacing bandSpace) {
  const int width = dataset.GetRasterXSize();
  QuietGdalErrors quiet;
  // Uncompressed GeoTIFFs are read through a memory map instead of the block cache (3x faster
  // here); GDAL checks the file's size first and falls back to normal reads when it can't.
  CPLErrorReset();
  CPLErr status = CE_None;
  for (int64_t row = row0; row < row0 + rows && status == CE_None; row += windowRows) {
    const int64_t count = std::min(windowRows, row0 + rows - row);
    status = dataset.RasterIO(GF_Read, 0, static_cast<int>(row), width, static_cast<int>(count),
                              buffer + (row - row0) * lineSpace, width, static_cast<int>(count),
                              type, static_cast<int>(bands.size()), const_cast<int*>(bands.data()),
                              pixelSpace, lineSpace, bandSpace, nullptr);
  }
  // Drop the blocks GDAL cached for this strip: we never read them again, and the block cache
  // would otherwise grow to GDAL's global limit, far past the user's RAM budget.
  dataset.FlushCache(false);
  if (status == CE_None) return;
  const std::string what = "rows " + std::to_string(row0 + 1) + "-" + std::to_string(row0 + rows) +
                           " of '" + dataset.GetDescription() + "'";
  if (quiet.outOfMemory()) throw outOfMemory("while reading " + what);
  throw Error("INPUT", "cannot read " + what + " (file damaged or truncated?)" + lastGdalError());
}

}  // namespace

void readStrip(GDALDataset& dataset, const std::vector<int>& bands, GDALDataType type, int64_t row0,
               int64_t rows, void* buffer, int pixelBands) {
  const int bandCount = static_cast<int>(bands.size());
  const GSpacing pixelSpace =
      static_cast<GSpacing>(pixelBands > 0 ? pixelBands : bandCount) * typeSize(type);
  const GSpacing lineSpace = pixelSpace * dataset.GetRasterXSize();
  const char* interleave = dataset.GetMetadataItem("INTERLEAVE", "IMAGE_STRUCTURE");
  const bool pixelInterleaved = interleave && EQUAL(interleave, "PIXEL");
  const int64_t windowRows =
      pixelInterleaved ? rows : std::max<int64_t>(1, kCachedWindowBytes / lineSpace);
  readWindows(dataset, bands, type, row0, rows, windowRows, static_cast<unsigned char*>(buffer),
              pixelSpace, lineSpace, typeSize(type));
}

void readBandMajorStrip(GDALDataset& dataset, const std::vector<int>& bands, GDALDataType type,
                        int64_t row0, int64_t rows, void* buffer, int64_t bandSpace) {
  const GSpacing pixelSpace = typeSize(type);
  readWindows(dataset, bands, type, row0, rows, rows, static_cast<unsigned char*>(buffer),
              pixelSpace, pixelSpace * dataset.GetRasterXSize(), bandSpace);
}

std::vector<double> readWindowAsDouble(GDALDataset& dataset, const std::vector<int>& bands,
                                       int64_t x0, int64_t y0, int64_t width, int64_t height,
                                       const std::string& parameter) {
  const auto count = static_cast<int64_t>(bands.size());
  std::vector<double> values(static_cast<size_t>(width * height * count));
  const char* interleave = dataset.GetMetadataItem("INTERLEAVE", "IMAGE_STRUCTURE");
  const int64_t group = interleave && EQUAL(interleave, "BAND") ? 16 : count;
  const GSpacing pixelSpace = count * static_cast<GSpacing>(sizeof(double));
  QuietGdalErrors quiet;
  for (int64_t first = 0; first < count; first += group) {
    const int64_t n = std::min(group, count - first);
    CPLErrorReset();
    const CPLErr status =
        dataset.RasterIO(GF_Read, static_cast<int>(x0), static_cast<int>(y0),
                         static_cast<int>(width), static_cast<int>(height), values.data() + first,
                         static_cast<int>(width), static_cast<int>(height), GDT_Float64,
                         static_cast<int>(n), const_cast<int*>(bands.data() + first), pixelSpace,
                         pixelSpace * width, sizeof(double), nullptr);
    dataset.FlushCache(false);
    if (status != CE_None)
      throw Error(parameter, "cannot read rows " + std::to_string(y0 + 1) + "-" +
                                 std::to_string(y0 + height) + ", columns " +
                                 std::to_string(x0 + 1) + "-" + std::to_string(x0 + width) +
                                 " of '" + dataset.GetDescription() + "'" + lastGdalError());
  }
  return values;
}

namespace {

// Bytes of file-backed (and shared) pages resident in this process, or -1 where unknown.
int64_t mappedFileBytes() {
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (!statm) return -1;
  long long size = 0, resident = 0, shared = 0;
  const bool ok = std::fscanf(statm, "%lld %lld %lld", &size, &resident, &shared) == 3;
  std::fclose(statm);
  return ok ? shared * static_cast<int64_t>(sysconf(_SC_PAGESIZE)) : -1;
}

constexpr int64_t kLargestFolio = 2ll << 20;  // a huge page: the page cache's largest folio here

}  // namespace

StripReader::StripReader(const RasterInfo& raster, std::vector<int> bands, int parallel,
                         int64_t mappedBytes, int64_t overlapRows)
    : path_(raster.path),
      bands_(std::move(bands)),
      type_(raster.type),
      lineBytes_(raster.width * static_cast<int64_t>(bands_.size()) * typeSize(raster.type)),
      bandInterleaved_(raster.bandInterleaved),
      mappable_(raster.mappable),
      blockHeight_(raster.blockHeight),
      mappedBytes_(mappedBytes),
      handles_(std::max(1, parallel)),
      parallel_(parallel),
      overlapRows_(overlapRows),
      pool_(std::make_unique<QThreadPool>()) {
  pool_->setMaxThreadCount(std::max(1, parallel - 1));
  if (raster.compressed) compressed_ = raster;
}

BlockDecoder& StripReader::decoder(Interleave interleave) {
  if (!decoder_)
    decoder_ =
        std::make_unique<BlockDecoder>(*compressed_, bands_, parallel_, overlapRows_, interleave);
  if (decoder_->interleave() != interleave)
    throw std::logic_error("StripReader: one reader reads strips one way");
  return *decoder_;
}

int64_t StripReader::mappingNeeded(int64_t rows, int64_t rowBytes, int bands, bool bandInterleaved,
                                   int parallel) {
  const int64_t runs = bandInterleaved ? bands : std::min<int64_t>(std::max(1, parallel), rows);
  return rows * rowBytes + runs * kLargestFolio;
}

StripReader::~StripReader() {
  pool_->waitForDone();
}

void StripReader::open(Handle& handle) {
  if (handle.dataset) return;
  // GTiff reads the option when the file is opened; it checks the file's size first and falls
  // back to ordinary reads when mapping is not possible (compressed, truncated, remote).
  ThreadConfigOption mapped("GTIFF_VIRTUAL_MEM_IO", *mapFile_ ? "YES" : "NO");
  handle.dataset = openRaster(path_, "INPUT");
}

void StripReader::closeAll() {
  for (Handle& handle : handles_) {
    handle.runs.reset();
    handle.runsTried = false;
    handle.pixelRuns.reset();
    handle.pixelRunsTried = false;
    handle.dataset.reset();
  }
  mappedAtOpen_ = mappedFileBytes();
  mappedEstimate_ = 0;
}

void StripReader::read(int64_t row0, int64_t rows, void* buffer) {
  if (compressed_) return decoder(Interleave::Pixel).read(row0, rows, buffer);
  readParts(row0, rows, static_cast<unsigned char*>(buffer), Interleave::Pixel);
}

void StripReader::readBandMajor(int64_t row0, int64_t rows, void* buffer) {
  if (compressed_) return decoder(Interleave::Band).read(row0, rows, buffer);
  readParts(row0, rows, static_cast<unsigned char*>(buffer), Interleave::Band);
}

// Opens fresh handles (unmapping) before the mapped pages would pass the reader's share.
void StripReader::keepMappingWithinShare(int64_t row0, int64_t rows) {
  const auto threads = static_cast<int>(handles_.size());
  // What this read maps, on average: its strip and, for each contiguous run of it (each band's
  // rows, or each part's rows), the rest of the folios it ends in. Folios the previous strip
  // mapped already hold the start of each run when the strips follow one another.
  const int64_t stripBytes = rows * lineBytes_;
  const int64_t fresh =
      mappingNeeded(rows, lineBytes_, static_cast<int>(bands_.size()), bandInterleaved_, threads);
  if (!mapFile_) {
    // Blocks taller than the strip (tiles) are always mapped, reopening as often as it takes:
    // through the block cache, which is dropped after each strip to stay in the budget, every
    // strip would read its blocks whole again (a 512-row tile row 25 times at 20-row strips).
    mapFile_ = mappable_ && (fresh <= mappedBytes_ || blockHeight_ > rows);
    mappedAtOpen_ = mappedFileBytes();
  }
  if (*mapFile_) {
    const int64_t now = mappedFileBytes();
    const int64_t mapped = now >= 0 && mappedAtOpen_ >= 0 ? now - mappedAtOpen_ : mappedEstimate_;
    auto expected = [&] {
      return handles_[0].dataset && row0 == nextRow_ ? 2 * stripBytes : fresh;
    };
    if (mapped + expected() > mappedBytes_) closeAll();
    mappedEstimate_ += expected();  // after a reopen, a fresh start
  }
  nextRow_ = row0 + rows;
}

void StripReader::readParts(int64_t row0, int64_t rows, unsigned char* buffer,
                            Interleave interleave) {
  // A band-interleaved file read into pixel-interleaved strips: each thread reads its rows as
  // runs of the file and interleaves them itself, in the cache, where GDAL would gather every
  // sample from the file's map.
  keepMappingWithinShare(row0, rows);  // first: it decides how handles open
  const bool interleaving =
      interleave == Interleave::Pixel && bandInterleaved_ && readsRuns(handles_[0]);
  // Otherwise a band-interleaved file is split between the threads by bands, others by rows:
  // each handle then touches only its bands' part of the file, where splitting rows had both
  // handles map every band's run of the strip. Band-major buffers are split by bands too.
  const bool byBands = !interleaving && (bandInterleaved_ || interleave == Interleave::Band);
  const auto threads = static_cast<int64_t>(handles_.size());
  const int64_t units = byBands ? static_cast<int64_t>(bands_.size()) : rows;
  const int parts = static_cast<int>(std::min(threads, units));
  const int64_t size = typeSize(type_);
  const int64_t bandBytes = rows * (lineBytes_ / static_cast<int64_t>(bands_.size()));
  // Opened here, one after another: opens made at once by many threads wait on one another
  // (a product's HDF5 or netCDF file is opened under GDAL's lock of its library; 16 at once took
  // 0.36 s where one takes milliseconds).
  for (int i = 0; i < parts; ++i) open(handles_[i]);
  std::vector<std::exception_ptr> errors(parts);
  auto part = [&](int i) {
    const int64_t first = units * i / parts;
    const int64_t count = units * (i + 1) / parts - first;
    try {
      Handle& handle = handles_[i];
      if (interleaving) {
        readInterleaving(handle, row0 + first, count, buffer + first * lineBytes_);
      } else if (!byBands && readsPixelRuns(handle)) {
        handle.pixelRuns->read(row0 + first, count, buffer + first * lineBytes_);
      } else if (!byBands) {
        readStrip(*handle.dataset, bands_, type_, row0 + first, count, buffer + first * lineBytes_);
      } else if (interleave == Interleave::Band) {
        readBandMajorPart(handle, first, count, row0, rows, buffer + first * bandBytes);
      } else {
        const std::vector<int> bands(bands_.begin() + first, bands_.begin() + first + count);
        readStrip(*handle.dataset, bands, type_, row0, rows, buffer + first * size,
                  static_cast<int>(bands_.size()));
      }
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  for (int i = 1; i < parts; ++i) pool_->start([&part, i] { part(i); });
  part(0);
  pool_->waitForDone();
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
}

bool StripReader::readsPixelRuns(Handle& handle) {
  open(handle);
  if (!handle.pixelRunsTried) {
    handle.pixelRuns = PixelRuns::open(*handle.dataset, type_, bands_);
    handle.pixelRunsTried = true;
  }
  return handle.pixelRuns != nullptr;
}

bool StripReader::readsRuns(Handle& handle) {
  open(handle);
  if (!handle.runsTried) {
    handle.runs = BandRuns::open(*handle.dataset, type_);
    handle.runsTried = true;
  }
  return handle.runs != nullptr;
}

namespace {

// Bytes of band-major rows a thread reads before interleaving them: they stay in its cache.
constexpr int64_t kInterleaveChunkBytes = 2ll << 20;
// out[c * rows + r] = in[r * columns + c]: a rows x columns matrix of samples transposed through
// tiles of 8 x 8 of constant size, which the compiler turns into shuffles (twice the speed of
// gathering each column at the row's stride when the columns are a pixel's bands).
template <class Word>
HYPERSTREAM_VECTOR_CLONES void transposeWords(const Word* __restrict in, int64_t rows,
                                              int64_t columns, Word* __restrict out) {
  constexpr int kTile = 8;
  Word tile[kTile][kTile];
  int64_t r0 = 0;
  for (; r0 + kTile <= rows; r0 += kTile) {
    int64_t c0 = 0;
    for (; c0 + kTile <= columns; c0 += kTile) {
      for (int i = 0; i < kTile; ++i)
        std::memcpy(tile[i], in + (r0 + i) * columns + c0, sizeof tile[i]);
      for (int j = 0; j < kTile; ++j)
        for (int i = 0; i < kTile; ++i) out[(c0 + j) * rows + r0 + i] = tile[i][j];
    }
    for (; c0 < columns; ++c0)
      for (int i = 0; i < kTile; ++i) out[c0 * rows + r0 + i] = in[(r0 + i) * columns + c0];
  }
  for (; r0 < rows; ++r0)
    for (int64_t c = 0; c < columns; ++c) out[c * rows + r0] = in[r0 * columns + c];
}

}  // namespace

// transposeWords for samples of 1, 2, 4 or 8 bytes (their bits are only moved).
void transposeSamples(const void* in, int64_t rows, int64_t columns, int sampleBytes, void* out) {
  auto transpose = [&](auto word) {
    using Word = decltype(word);
    transposeWords(static_cast<const Word*>(in), rows, columns, static_cast<Word*>(out));
  };
  switch (sampleBytes) {
    case 1:
      transpose(uint8_t{});
      break;
    case 2:
      transpose(uint16_t{});
      break;
    case 4:
      transpose(uint32_t{});
      break;
    default:
      transpose(uint64_t{});
      break;
  }
}

// Rows [row0, row0 + rows) as band runs, a few rows at a time, interleaved into `buffer`.
void StripReader::readInterleaving(Handle& handle, int64_t row0, int64_t rows,
                                   unsigned char* buffer) {
  const auto bands = static_cast<int>(bands_.size());
  const int64_t chunkRows = std::clamp<int64_t>(kInterleaveChunkBytes / lineBytes_, 1, rows);
  handle.scratch.resize(static_cast<size_t>(chunkRows * lineBytes_));
  const int64_t width = lineBytes_ / (int64_t{bands} * typeSize(type_));
  for (int64_t row = 0; row < rows; row += chunkRows) {
    const int64_t count = std::min(chunkRows, rows - row);
    readBandMajorPart(handle, 0, bands, row0 + row, count, handle.scratch.data());
    unsigned char* out = buffer + row * lineBytes_;
    // Band-major rows (bands x pixels) to pixel-interleaved ones (pixels x bands).
    transposeSamples(handle.scratch.data(), bands, count * width, typeSize(type_), out);
  }
}

// Each band as runs of the file where it can be, else through GDAL.
void StripReader::readBandMajorPart(Handle& handle, int64_t firstBand, int64_t bands, int64_t row0,
                                    int64_t rows, unsigned char* buffer) {
  readsRuns(handle);
  const int64_t bandBytes = rows * (lineBytes_ / static_cast<int64_t>(bands_.size()));
  for (int64_t i = 0; i < bands; ++i) {
    const int band = bands_[firstBand + i];
    unsigned char* target = buffer + i * bandBytes;
    if (!handle.runs || !handle.runs->read(band, row0, rows, target))
      readBandMajorStrip(*handle.dataset, {band}, type_, row0, rows, target, bandBytes);
  }
}

}  // namespace hyperstream
