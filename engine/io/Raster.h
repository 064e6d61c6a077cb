#pragma once
// GDAL raster access: RAII datasets, raster descriptions and pixel-interleaved strip I/O.

#include "core/Feedback.h"
#include "core/JobOptions.h"
#include "core/Samples.h"

#include <gdal_priv.h>

#include <QThreadPool>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hyperstream {

class BandRuns;
class PixelRuns;
class BlockDecoder;
struct Glt;
struct Orthorectification;

// How a strip buffer holds its samples: pixel-interleaved (pixel p's band b at p * bands + b) or
// band-major (band b's pixels together, at b * pixels + p).
enum class Interleave { Pixel, Band };

struct DatasetCloser {
  void operator()(GDALDataset* dataset) const { GDALClose(GDALDataset::ToHandle(dataset)); }
};
using DatasetPtr = std::unique_ptr<GDALDataset, DatasetCloser>;

// Silences GDAL's default error printing on this thread while alive; the engine reports
// failures itself, with CPLGetLastErrorMsg() in its own messages. Thread-local, so it never
// changes what QGIS or other threads see. It also notes whether GDAL ran out of memory: GDAL's
// last message then often blames something else ("GetBlockRef failed").
class QuietGdalErrors {
 public:
  QuietGdalErrors() { CPLPushErrorHandlerEx(note, this); }
  ~QuietGdalErrors() { CPLPopErrorHandler(); }
  QuietGdalErrors(const QuietGdalErrors&) = delete;
  QuietGdalErrors& operator=(const QuietGdalErrors&) = delete;
  bool outOfMemory() const { return outOfMemory_; }

 private:
  static void CPL_STDCALL note(CPLErr, CPLErrorNum number, const char*) {
    if (number == CPLE_OutOfMemory)
      static_cast<QuietGdalErrors*>(CPLGetErrorHandlerUserData())->outOfMemory_ = true;
  }
  bool outOfMemory_ = false;
};

// What the engine needs to know about an input raster.
struct RasterInfo {
  std::string path;
  int64_t width = 0;
  int64_t height = 0;
  int bandCount = 0;
  // The type the bands are read in: the narrowest that holds every band's values exactly
  // (GDALDataTypeUnion; openJobInput narrows it to the selected bands). Bands may differ (a VRT
  // stacking UInt16 and Float32 files), and reading them all as band 1's type misreads them.
  GDALDataType type = GDT_Unknown;
  std::vector<GDALDataType> bandTypes;  // per band
  int blockWidth = 1;
  int blockHeight = 1;
  bool bandInterleaved = false;  // INTERLEAVE=BAND: each band's rows lie together in the file
  bool mappable = false;         // an uncompressed GeoTIFF, which StripReader may read as a map
  bool compressed = false;       // blocks GDAL decompresses: StripReader decodes each once
  std::vector<double> nodata;    // per band; NaN where the band declares none
  std::string nodataProblem;     // why a declared nodata value is not used (not a number)
  bool hasGeoTransform = false;
  std::array<double, 6> geoTransform{};
  std::string crsWkt;
  std::vector<std::string> bandDescriptions;
  // Per band, in nanometres, NaN where unknown (SpectralMetadata.h says where they are read).
  std::vector<double> wavelengths, fwhm;
  std::string wavelengthUnits;     // "nm" where the bands have wavelengths, else empty
  std::string wavelengthSource;    // where they were found
  std::string wavelengthProblem;   // without them: why a list found is not used
  std::vector<bool> goodBands;     // the bad-band list (false: bad); empty when the file has none
  std::string goodBandsProblem;    // why a bad-band list the file has is not used
  std::vector<std::string> files;  // every file of the dataset (e.g. ENVI .hdr beside the data)
  // A sensor's product opened by its reader (io/products): its name, its values' units, what its
  // geometry is, and its GLT where it has one.
  std::string product, productUnits, geometryNote;
  std::function<std::shared_ptr<const Glt>()> readGlt;
  // Set by requestOrthorectification(): outputs made like this input go on the GLT's map grid.
  std::shared_ptr<const Orthorectification> orthorectification;
};

// A line for the log about an input that is a sensor's product; empty for other rasters.
std::string productSummary(const RasterInfo& info);
// Puts the outputs made like `info` (createLike) on its GLT's map grid; throws
// Error("ORTHORECTIFY") when the input has no GLT.
void requestOrthorectification(RasterInfo& info, int64_t ramBytes);

// GDAL's last error message, cut to a few lines (the GeoPackage driver's quote whole scripts).
std::string gdalErrorText();
// ": " and that message, or empty where GDAL gives none.
std::string lastGdalError();

// Sets a GDAL configuration option for the calling thread only while alive: it never changes
// what QGIS or other threads see.
class ThreadConfigOption {
 public:
  ThreadConfigOption(const char* key, const char* value);
  ~ThreadConfigOption();
  ThreadConfigOption(const ThreadConfigOption&) = delete;
  ThreadConfigOption& operator=(const ThreadConfigOption&) = delete;

 private:
  const char* key_;
  std::string previous_;
};

// Initialises GDAL's drivers once (safe to call repeatedly and inside QGIS).
void ensureGdalDrivers();

// Opens a raster read-only; throws Error(parameter, ...) with the reason when it can't.
DatasetPtr openRaster(const std::string& path, const std::string& parameter);
// The same, reading an uncompressed GeoTIFF through a memory map: a pixel read from a tiled file
// then touches its own bytes, not a whole tile decoded into GDAL's block cache (104 MB for a
// 512 x 512 tile of 198 bands). Other files open as openRaster opens them.
DatasetPtr openMapped(const std::string& path, const std::string& parameter);
RasterInfo describeRaster(GDALDataset& dataset, const std::string& path);

// Bytes per value of a GDAL data type.
int typeSize(GDALDataType type);
// GDAL's type as the kernels' sample type; throws Error("INPUT") for types they do not take.
SampleType sampleTypeOf(GDALDataType type);
GDALDataType gdalType(SampleType type);
GDALDataType gdalType(OutputType type);  // GDT_Unknown for SameAsInput
OutputType outputTypeOf(GDALDataType type);

// Reads rows [row0, row0 + rows) of the given 1-based bands into `buffer`, pixel-interleaved
// (pixel p's band b at p * bands.size() + b), in `type`, with RasterIO's pixel/line/band spacing.
// With pixelBands > bands.size(), the bands go into the first slots of pixels pixelBands wide.
void readStrip(GDALDataset& dataset, const std::vector<int>& bands, GDALDataType type, int64_t row0,
               int64_t rows, void* buffer, int pixelBands = 0);

// Reads rows [row0, row0 + rows) of the given 1-based bands into `buffer` band-major: band i's
// rows at buffer + i * bandSpace bytes, each row after the other. From a band-interleaved file
// this copies runs of the file as they are, without a gather.
void readBandMajorStrip(GDALDataset& dataset, const std::vector<int>& bands, GDALDataType type,
                        int64_t row0, int64_t rows, void* buffer, int64_t bandSpace);

// Reads strips of one raster. A compressed file goes through a BlockDecoder (each block
// decompressed once per pass; `overlapRows` is how far a strip may begin before the previous
// one's end). Otherwise each strip is split into band ranges (band-interleaved files) or row
// ranges (others) read in parallel by `parallel` threads, each with a GDAL handle of its own
// (datasets are not thread-safe). Uncompressed GeoTIFFs are read through a memory map of the file
// (GTIFF_VIRTUAL_MEM_IO, set for the opening thread only), three times faster than the block
// cache. Mapped pages count as the process's resident memory, and the page cache may hold the file
// in 2 MiB folios that are mapped whole: reading a band-interleaved strip maps about 2 MiB per
// band more than the strip. So the file is mapped only when a strip's expected mapping fits
// `mappedBytes`, and the handles are reopened (unmapping) before the mapped pages, as the process's
// own count shows them, would pass it; otherwise GDAL reads through its block cache.
class StripReader {
 public:
  // All handles together keep at most `mappedBytes` of the file mapped.
  StripReader(const RasterInfo& raster, std::vector<int> bands, int parallel, int64_t mappedBytes,
              int64_t overlapRows);
  ~StripReader();
  // Strips into pixel-interleaved buffers (pixel p's band b at p * bands + b).
  void read(int64_t row0, int64_t rows, void* buffer);
  // Strips into band-major buffers (band b's pixels together, at b * pixels + p), for kernels
  // that take them. One reader reads one way.
  void readBandMajor(int64_t row0, int64_t rows, void* buffer);

  // The least `mappedBytes` with which `parallel` threads read strips of `rows` rows, `rowBytes`
  // each, through the file's mapping: the strip, and a folio for each contiguous run of it (each
  // band's rows of a band-interleaved file, else each thread's share of the rows).
  static int64_t mappingNeeded(int64_t rows, int64_t rowBytes, int bands, bool bandInterleaved,
                               int parallel);

 private:
  struct Handle {
    DatasetPtr dataset;
    std::unique_ptr<BandRuns> runs;  // band-major reads of a plain band-interleaved file
    bool runsTried = false;
    std::unique_ptr<PixelRuns> pixelRuns;  // reads of a plain pixel-interleaved file
    bool pixelRunsTried = false;
    std::vector<unsigned char> scratch;  // band-major rows being interleaved
  };
  BlockDecoder& decoder(Interleave interleave);
  void open(Handle& handle);
  void keepMappingWithinShare(int64_t row0, int64_t rows);
  void readParts(int64_t row0, int64_t rows, unsigned char* buffer, Interleave interleave);
  void readBandMajorPart(Handle& handle, int64_t firstBand, int64_t bands, int64_t row0,
                         int64_t rows, unsigned char* buffer);
  // Whether the handle reads the file's bands as runs (BandRuns); opens it.
  bool readsRuns(Handle& handle);
  // Whether the handle reads whole rows as runs of the file (PixelRuns); opens it.
  bool readsPixelRuns(Handle& handle);
  void readInterleaving(Handle& handle, int64_t row0, int64_t rows, unsigned char* buffer);
  void closeAll();

  std::string path_;
  std::vector<int> bands_;
  GDALDataType type_;
  int64_t lineBytes_;
  bool bandInterleaved_;
  bool mappable_;
  int blockHeight_;  // the file's: GDAL's block cache reads whole blocks
  int64_t mappedBytes_;
  std::vector<Handle> handles_;
  int parallel_;
  int64_t overlapRows_;
  std::optional<bool> mapFile_;  // decided at the first read, from its strip's height
  int64_t mappedAtOpen_ = 0;     // the process's mapped file pages when handles opened
  int64_t mappedEstimate_ = 0;   // estimated since then, where the count is unavailable
  int64_t nextRow_ = -1;         // the row after the last strip read
  std::unique_ptr<QThreadPool> pool_;
  // Compressed files: the decoder is made at the first read, for its layout.
  std::optional<RasterInfo> compressed_;
  std::unique_ptr<BlockDecoder> decoder_;
};

// A window of the bands as float64, pixel-interleaved (a spectrum, the pixels around one), read
// with GDAL's block cache dropped after every group of bands: a band-interleaved file's blocks are
// then held a few bands at a time, not all of them at once. Throws Error(parameter).
std::vector<double> readWindowAsDouble(GDALDataset& dataset, const std::vector<int>& bands,
                                       int64_t x0, int64_t y0, int64_t width, int64_t height,
                                       const std::string& parameter);

// out[c * rows + r] = in[r * columns + c] for a rows x columns matrix of samples of 1, 2, 4 or 8
// bytes: pixel-interleaved rows to band-major ones and back.
void transposeSamples(const void* in, int64_t rows, int64_t columns, int sampleBytes, void* out);

// Writes a pixel-interleaved strip into every band of `dataset`, a few megabytes of whole blocks
// at a time; throws Canceled between them when `feedback` is canceled.
void writeStrip(GDALDataset& dataset, GDALDataType type, int64_t row0, int64_t rows,
                const void* buffer, const Feedback& feedback);

// The GDAL driver for an output: `format` (a short name such as GTiff or ENVI) when given,
// otherwise chosen from the file extension (GeoTIFF when none matches). Throws when the driver
// does not exist or cannot create rasters.
GDALDriver* outputDriver(const std::string& path, const std::string& format);

// The 1-based bands a job uses: `requested`, or every band when empty. Throws Error("BANDS") for
// a band that does not exist or is given twice, and when fewer than two are left (`job` names
// the job in the message).
std::vector<int> selectBands(const BandList& requested, int bandCount, const std::string& job);

// A job's input, opened and checked (Error("INPUT") or Error("BANDS")): readable, not complex,
// no shorter than its header says (GDAL reads the missing end of a raw file as zeros), with the
// selected bands (`requestedBands`, or all), their nodata values, and info.type the type that
// holds every selected band.
struct JobInput {
  DatasetPtr dataset;
  RasterInfo info;
  std::vector<int> bands;                       // 1-based
  std::vector<double> nodata;                   // per selected band, NaN for none
  SampleType sampleType = SampleType::Float64;  // info.type's
};
// `exclude` leaves out bands of those asked for (BandExclusions); an error names EXCLUDE_NM or
// USE_BBL when the file has no wavelengths or no bad-band list, or when fewer than two bands are
// left. `nodata`, when given, is every band's nodata value in place of the file's; Error("NODATA")
// when the bands' type cannot hold it.
JobInput openJobInput(const std::string& path, const BandList& requestedBands,
                      const BandExclusions& exclude, std::optional<double> nodata,
                      const std::string& job);
// A job's main input as its options describe it (`bands`, exclusions, nodata, orthorectification),
// said in the log when it is a sensor's product.
JobInput openJobInput(const JobOptions& options, const BandList& bands, const std::string& job,
                      Feedback& feedback);

}  // namespace hyperstream
