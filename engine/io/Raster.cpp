#include "io/Raster.h"

#include "core/Error.h"
#include "core/Samples.h"
#include "io/BandRuns.h"
#include "io/BlockDecoder.h"
#include "io/InputFiles.h"
#include "io/Orthorectify.h"
#include "io/SpectralMetadata.h"
#include "io/products/Products.h"

#include <cpl_string.h>
#include <ogr_spatialref.h>

#include <QFileInfo>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace hyperstream {

std::string gdalErrorText() {
  std::string message = CPLGetLastErrorMsg();
  if (message.size() > 300) message = message.substr(0, 300) + "...";  // SQLite's whole script
  return message;
}

std::string lastGdalError() {
  const std::string message = gdalErrorText();
  return message.empty() ? message : ": " + message;
}

ThreadConfigOption::ThreadConfigOption(const char* key, const char* value) : key_(key) {
  const char* previous = CPLGetThreadLocalConfigOption(key, nullptr);
  if (previous) previous_ = previous;
  CPLSetThreadLocalConfigOption(key, value);
}

ThreadConfigOption::~ThreadConfigOption() {
  CPLSetThreadLocalConfigOption(key_, previous_.empty() ? nullptr : previous_.c_str());
}

void ensureGdalDrivers() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (GDALGetDriverCount() == 0) GDALAllRegister();
  });
}

int typeSize(GDALDataType type) {
  return GDALGetDataTypeSizeBytes(type);
}

namespace {

constexpr std::pair<GDALDataType, SampleType> kSampleTypes[] = {
    {GDT_Byte, SampleType::Byte},      {GDT_UInt16, SampleType::UInt16},
    {GDT_Int16, SampleType::Int16},    {GDT_UInt32, SampleType::UInt32},
    {GDT_Int32, SampleType::Int32},    {GDT_Float32, SampleType::Float32},
    {GDT_Float64, SampleType::Float64}};

}  // namespace

SampleType sampleTypeOf(GDALDataType type) {
  for (const auto& [gdal, sample] : kSampleTypes)
    if (gdal == type) return sample;
  throw Error("INPUT", std::string("unsupported data type ") + GDALGetDataTypeName(type) +
                           " (supported: Byte, UInt16, Int16, UInt32, Int32, Float32, Float64)");
}

GDALDataType gdalType(SampleType type) {
  for (const auto& [gdal, sample] : kSampleTypes)
    if (sample == type) return gdal;
  return GDT_Unknown;
}

GDALDataType gdalType(OutputType type) {
  if (type == OutputType::SameAsInput) return GDT_Unknown;
  return GDALGetDataTypeByName(outputTypeName(type).c_str());
}

OutputType outputTypeOf(GDALDataType type) {
  for (OutputType candidate :
       {OutputType::Float32, OutputType::Float64, OutputType::Byte, OutputType::UInt16,
        OutputType::Int16, OutputType::UInt32, OutputType::Int32})
    if (gdalType(candidate) == type) return candidate;
  throw Error("INPUT", std::string("no output of data type ") + GDALGetDataTypeName(type));
}

namespace {

GDALDataType commonType(const std::vector<GDALDataType>& types) {
  GDALDataType common = types.empty() ? GDT_Unknown : types[0];
  for (GDALDataType type : types) common = GDALDataTypeUnion(common, type);
  return common;
}

}  // namespace

namespace {

// Why a dataset without bands cannot be read, with the subdatasets to give instead if it has any
// (a netCDF or HDF5 container): their names and descriptions, the first kListed of them, on one
// line as every error is.
std::string noBandsMessage(GDALDataset& dataset, const std::string& path) {
  constexpr int kListed = 12;
  CSLConstList subdatasets = dataset.GetMetadata("SUBDATASETS");
  std::string listed;
  int count = 0;
  for (CSLConstList item = subdatasets; item && *item; ++item) {
    const std::string entry = *item;
    const size_t equals = entry.find('=');
    if (equals == std::string::npos || entry.compare(equals - 5, 5, "_NAME") != 0) continue;
    if (++count > kListed) continue;
    const std::string key = entry.substr(0, equals - 5) + "_DESC";
    const char* description = CSLFetchNameValue(subdatasets, key.c_str());
    listed += (listed.empty() ? " " : "; ") + entry.substr(equals + 1);
    if (description) listed += std::string("  (") + description + ")";
  }
  if (count == 0) return "'" + path + "' has no raster bands";
  if (count > kListed) listed += "; and " + std::to_string(count - kListed) + " more";
  return "'" + path + "' holds no bands of its own but " + std::to_string(count) +
         " subdataset(s); give the one to read as the input:" + listed;
}

}  // namespace

DatasetPtr openRaster(const std::string& path, const std::string& parameter) {
  ensureGdalDrivers();
  if (path.empty()) throw Error(parameter, "no input raster given");
  checkInputFile(path, parameter);
  if (std::unique_ptr<ProductDataset> product = openProduct(path))
    return DatasetPtr(product.release());
  QuietGdalErrors quiet;
  CPLErrorReset();
  DatasetPtr dataset(GDALDataset::FromHandle(
      GDALOpenEx(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY, nullptr, nullptr, nullptr)));
  if (!dataset)
    throw Error(parameter, "'" + path + "' is not a raster GDAL can read" + lastGdalError());
  if (dataset->GetRasterCount() == 0) throw Error(parameter, noBandsMessage(*dataset, path));
  return dataset;
}

DatasetPtr openMapped(const std::string& path, const std::string& parameter) {
  // GTiff reads the option when the file is opened, and falls back to ordinary reads when the
  // file cannot be mapped (compressed, truncated, remote).
  ThreadConfigOption mapped("GTIFF_VIRTUAL_MEM_IO", "YES");
  return openRaster(path, parameter);
}

RasterInfo describeRaster(GDALDataset& dataset, const std::string& path) {
  RasterInfo info;
  info.path = path;
  info.width = dataset.GetRasterXSize();
  info.height = dataset.GetRasterYSize();
  info.bandCount = dataset.GetRasterCount();
  GDALRasterBand* first = dataset.GetRasterBand(1);
  for (int b = 1; b <= info.bandCount; ++b)
    info.bandTypes.push_back(dataset.GetRasterBand(b)->GetRasterDataType());
  info.type = commonType(info.bandTypes);
  first->GetBlockSize(&info.blockWidth, &info.blockHeight);
  const char* interleave = dataset.GetMetadataItem("INTERLEAVE", "IMAGE_STRUCTURE");
  info.bandInterleaved = interleave && EQUAL(interleave, "BAND");
  const char* compression = dataset.GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE");
  GDALDriver* driver = dataset.GetDriver();
  info.compressed = compression && !EQUAL(compression, "NONE");
  info.mappable = driver && EQUAL(driver->GetDescription(), "GTiff") && !info.compressed;
  for (int b = 1; b <= info.bandCount; ++b) {
    GDALRasterBand* band = dataset.GetRasterBand(b);
    int hasNodata = 0;
    const double value = band->GetNoDataValue(&hasNodata);
    info.nodata.push_back(hasNodata ? value : std::nan(""));
    info.bandDescriptions.emplace_back(band->GetDescription());
  }
  // GDAL's ENVI driver reads a "data ignore value" that is no number as 0.
  if (const char* ignored = dataset.GetMetadataItem("data_ignore_value", "ENVI")) {
    bool number = false;
    QString(ignored).trimmed().toDouble(&number);
    if (!number) {
      std::fill(info.nodata.begin(), info.nodata.end(), std::nan(""));
      info.nodataProblem = "'" + path +
                           "': its ENVI header's 'data ignore value = " + std::string(ignored) +
                           "' is not a number";
    }
  }
  SpectralMetadata spectral = readSpectralMetadata(dataset, path);
  info.wavelengths = std::move(spectral.wavelengths);
  info.fwhm = std::move(spectral.fwhm);
  info.goodBands = std::move(spectral.good);
  info.goodBandsProblem = spectral.goodProblem;
  info.wavelengthSource = spectral.source;
  info.wavelengthProblem = spectral.wavelengthProblem;
  if (!info.wavelengthSource.empty()) info.wavelengthUnits = "nm";
  // The C API: GDAL 3.12 deprecates the C++ methods taking six doubles.
  info.hasGeoTransform =
      GDALGetGeoTransform(GDALDataset::ToHandle(&dataset), info.geoTransform.data()) == CE_None;
  if (const OGRSpatialReference* srs = dataset.GetSpatialRef()) {
    char* wkt = nullptr;
    if (srs->exportToWkt(&wkt) == OGRERR_NONE && wkt) info.crsWkt = wkt;
    CPLFree(wkt);
  }
  char** files = dataset.GetFileList();
  for (char** f = files; f && *f; ++f) info.files.emplace_back(*f);
  CSLDestroy(files);
  if (const auto* product = dynamic_cast<const ProductDataset*>(&dataset)) {
    const ProductCube& cube = product->cube();
    info.product = cube.product;
    info.productUnits = cube.units;
    info.geometryNote = cube.geometryNote;
    info.readGlt = cube.readGlt;
    if (!info.wavelengthSource.empty()) info.wavelengthSource = cube.product + "'s metadata";
  }
  return info;
}

std::string productSummary(const RasterInfo& info) {
  if (info.product.empty()) return {};
  std::string summary = info.product + ": " + std::to_string(info.width) + " x " +
                        std::to_string(info.height) + " pixels, " + std::to_string(info.bandCount) +
                        " bands in image order";
  if (!info.productUnits.empty()) summary += ", values in " + info.productUnits;
  if (!info.wavelengthSource.empty()) summary += ", wavelengths from " + info.wavelengthSource;
  if (!info.geometryNote.empty() && !info.orthorectification) summary += "; " + info.geometryNote;
  if (info.orthorectification)
    summary += "; outputs on the GLT's map grid (" +
               std::to_string(info.orthorectification->glt->width) + " x " +
               std::to_string(info.orthorectification->glt->height) + ")";
  return summary;
}

void requestOrthorectification(RasterInfo& info, int64_t ramBytes) {
  if (!info.readGlt)
    throw Error("ORTHORECTIFY",
                "'" + info.path + "' has no GLT to orthorectify with (EMIT products have one)");
  auto ortho = std::make_shared<Orthorectification>();
  ortho->glt = info.readGlt();
  ortho->ramBytes = ramBytes;
  // A GLT none of whose cells names a pixel of the image (1-based indices) maps nothing.
  const Glt& glt = *ortho->glt;
  bool names = false;
  for (size_t i = 0; i < glt.row.size() && !names; ++i)
    names = glt.row[i] >= 1 && glt.row[i] <= info.height && glt.column[i] >= 1 &&
            glt.column[i] <= info.width;
  if (!names)
    throw Error("ORTHORECTIFY", "'" + info.path + "': no cell of its GLT names a pixel of the " +
                                    std::to_string(info.width) + " x " +
                                    std::to_string(info.height) +
                                    " image (glt_x, glt_y are 1-based): the GLT does not belong "
                                    "to it, or is damaged");
  info.orthorectification = ortho;
}

namespace {

// Rows written (and flushed) at a time: whole blocks of the output, about this many bytes, so
// that a cancel is not kept waiting for a strip of hundreds of megabytes to reach the disk.
constexpr int64_t kWritePartBytes = 8ll << 20;

std::string rowsOf(const GDALDataset& dataset, int64_t row0, int64_t rows) {
  return "rows " + std::to_string(row0 + 1) + "-" + std::to_string(row0 + rows) + " of '" +
         dataset.GetDescription() + "'";
}

[[noreturn]] void failedWriting(const QuietGdalErrors& quiet, const std::string& what) {
  if (quiet.outOfMemory()) throw outOfMemory("while writing " + what);
  throw Error("OUTPUT", "cannot write " + what + " (disk full?)" + lastGdalError());
}

// Writes pixel-interleaved rows. GDAL is handed them band after band (`bandMajor`, room for the
// rows): its copy from a pixel-interleaved buffer goes sample by sample at the pixel's stride and
// made a 2.09 GB GeoTIFF (198 bands) take 5.3-6.7 s to write against 3.1-3.5 s band after band,
// ENVI BIP and BSQ alike (docs/benchmarks.md).
void writeRows(GDALDataset& dataset, GDALDataType type, int64_t row0, int64_t rows,
               const unsigned char* buffer, std::vector<unsigned char>& bandMajor) {
  const int bandCount = dataset.GetRasterCount();
  const int64_t width = dataset.GetRasterXSize();
  const int size = typeSize(type);
  const int64_t lineBytes = width * bandCount * size;
  // At most a part at a time (the file's blocks may be taller): GDAL holds them till the flush.
  const int64_t chunkRows =
      bandCount > 1 ? std::max<int64_t>(1, kWritePartBytes / lineBytes) : rows;
  for (int64_t first = 0; first < rows; first += chunkRows) {
    const int64_t count = std::min(chunkRows, rows - first);
    const int64_t pixels = count * width;
    const unsigned char* data = buffer + first * lineBytes;
    GSpacing pixelSpace = static_cast<GSpacing>(bandCount) * size, bandSpace = size;
    if (bandCount > 1) {
      bandMajor.resize(static_cast<size_t>(pixels * bandCount * size));
      transposeSamples(data, pixels, bandCount, size, bandMajor.data());
      data = bandMajor.data();
      pixelSpace = size;
      bandSpace = static_cast<GSpacing>(pixels) * size;
    }
    QuietGdalErrors quiet;
    CPLErrorReset();
    const CPLErr status =
        dataset.RasterIO(GF_Write, 0, static_cast<int>(row0 + first), static_cast<int>(width),
                         static_cast<int>(count), const_cast<unsigned char*>(data),
                         static_cast<int>(width), static_cast<int>(count), type, bandCount, nullptr,
                         pixelSpace, pixelSpace * width, bandSpace, nullptr);
    if (status != CE_None) failedWriting(quiet, rowsOf(dataset, row0 + first, count));
  }
}

// Writes the blocks GDAL holds (whole rows of blocks: a compressed block written before it is
// complete is compressed again, and stored again, when the rest comes), keeping its cache small.
void flushBlocks(GDALDataset& dataset, int64_t row0, int64_t rows) {
  QuietGdalErrors quiet;
  CPLErrorReset();
  dataset.FlushCache(false);
  if (CPLGetLastErrorType() >= CE_Failure) failedWriting(quiet, rowsOf(dataset, row0, rows));
}

}  // namespace

void writeStrip(GDALDataset& dataset, GDALDataType type, int64_t row0, int64_t rows,
                const void* buffer, const Feedback& feedback) {
  const int64_t lineBytes =
      static_cast<int64_t>(dataset.GetRasterCount()) * typeSize(type) * dataset.GetRasterXSize();
  int blockWidth = 0, blockHeight = 1;
  dataset.GetRasterBand(1)->GetBlockSize(&blockWidth, &blockHeight);
  blockHeight = std::max(1, blockHeight);
  const int64_t blocks = std::max<int64_t>(1, kWritePartBytes / (lineBytes * blockHeight));
  const int64_t partRows = blocks * blockHeight;
  const auto* bytes = static_cast<const unsigned char*>(buffer);
  std::vector<unsigned char> bandMajor;  // a part, band after band
  for (int64_t row = row0; row < row0 + rows;) {
    if (feedback.isCanceled()) throw Canceled();
    // Parts end on block boundaries of the file, so that no block is written twice.
    const int64_t end = std::min(row0 + rows, (row / partRows + 1) * partRows);
    writeRows(dataset, type, row, end - row, bytes + (row - row0) * lineBytes, bandMajor);
    if (end % blockHeight == 0 || end == dataset.GetRasterYSize())
      flushBlocks(dataset, row, end - row);
    row = end;
  }
}

GDALDriver* outputDriver(const std::string& path, const std::string& format) {
  ensureGdalDrivers();
  GDALDriverManager* manager = GetGDALDriverManager();
  auto canCreate = [](GDALDriver* driver) {
    return driver && driver->GetMetadataItem(GDAL_DCAP_RASTER) &&
           driver->GetMetadataItem(GDAL_DCAP_CREATE);
  };
  if (!format.empty()) {
    GDALDriver* driver = manager->GetDriverByName(format.c_str());
    if (!driver) throw Error("FORMAT", "unknown GDAL raster format '" + format + "'");
    if (!canCreate(driver))
      throw Error("FORMAT", "GDAL format '" + format + "' cannot create rasters");
    return driver;
  }
  const std::string extension =
      QFileInfo(QString::fromStdString(path)).suffix().toLower().toStdString();
  if (extension.empty() || extension == "tif" || extension == "tiff")
    return manager->GetDriverByName("GTiff");
  for (int i = 0; i < manager->GetDriverCount(); ++i) {
    GDALDriver* driver = manager->GetDriver(i);
    if (!canCreate(driver)) continue;
    const char* extensions = driver->GetMetadataItem(GDAL_DMD_EXTENSIONS);
    if (!extensions) continue;
    const CPLStringList list(CSLTokenizeString(extensions));
    for (int e = 0; e < list.size(); ++e)
      if (EQUAL(list[e], extension.c_str())) return driver;
  }
  throw Error("OUTPUT", "no GDAL driver creates '." + extension +
                            "' files: use .tif, or name a format such as ENVI");
}

std::vector<int> selectBands(const BandList& requested, int bandCount, const std::string& job) {
  BandList ranges = requested;
  if (ranges.empty()) ranges.emplace_back(1, bandCount);
  auto missing = [&](int band) {
    return Error("BANDS", "band " + std::to_string(band) + " does not exist: the input has " +
                              std::to_string(bandCount) + " band(s)");
  };
  for (const BandRange& range : ranges) {
    if (range.first > range.last)
      throw Error("BANDS", "the range " + std::to_string(range.first) + "-" +
                               std::to_string(range.last) + " runs backwards");
    if (range.first < 1) throw missing(range.first);
    if (range.last > bandCount) throw missing(range.last);
  }
  std::vector<int> bands;
  std::vector<char> seen(static_cast<size_t>(bandCount) + 1, 0);
  for (const BandRange& range : ranges)
    for (int b = range.first; b <= range.last; ++b) {
      if (seen[b]) throw Error("BANDS", "band " + std::to_string(b) + " is selected twice");
      seen[b] = 1;
      bands.push_back(b);
    }
  if (bands.size() < 2)
    throw Error(requested.empty() ? "INPUT" : "BANDS",
                job + " needs at least two bands; " +
                    std::string(requested.empty() ? "the input has " : "the selection has ") +
                    std::to_string(bands.size()));
  return bands;
}

namespace {

void excludeBands(std::vector<int>& bands, const RasterInfo& info, const BandExclusions& exclude) {
  if (!exclude.nanometres.empty()) {
    for (int b : bands)
      if (std::isnan(info.wavelengths[b - 1]))
        throw Error("EXCLUDE_NM",
                    "band " + std::to_string(b) +
                        " has no wavelength: the input's bands cannot be "
                        "excluded by wavelength" +
                        (info.wavelengthProblem.empty() ? std::string()
                                                        : " (" + info.wavelengthProblem + ")"));
    const auto excluded = [&](int b) {
      const double nm = info.wavelengths[b - 1];
      return std::any_of(
          exclude.nanometres.begin(), exclude.nanometres.end(),
          [&](const auto& range) { return nm >= range.first && nm <= range.second; });
    };
    bands.erase(std::remove_if(bands.begin(), bands.end(), excluded), bands.end());
    if (bands.size() < 2)
      throw Error("EXCLUDE_NM", "the wavelength ranges leave " + std::to_string(bands.size()) +
                                    " band(s); at least two are needed");
  }
  if (exclude.badBandList) {
    if (info.goodBands.empty() && !info.goodBandsProblem.empty())
      throw Error("USE_BBL", info.goodBandsProblem);
    if (info.goodBands.empty())
      throw Error("USE_BBL",
                  "the input has no bad-band list (an ENVI header's 'bbl' field, in the file's "
                  "ENVI metadata, its bands' 'bbl' items or an ENVI header beside it)");
    const std::vector<bool>& good = info.goodBands;
    bands.erase(std::remove_if(bands.begin(), bands.end(), [&](int b) { return !good[b - 1]; }),
                bands.end());
    if (bands.size() < 2)
      throw Error("USE_BBL", "the bad-band list leaves " + std::to_string(bands.size()) +
                                 " band(s); at least two are needed");
  }
}

}  // namespace

namespace {

// A declared nodata value every selected band's type holds exactly (else no sample could match it,
// and the user's fill would be counted valid without a word).
void checkDeclaredNodata(double nodata, const std::vector<GDALDataType>& types) {
  if (!std::isfinite(nodata))
    throw Error("NODATA", "give a finite number (NaN samples are never valid anyway)");
  for (GDALDataType type : types) {
    int clamped = 0, rounded = 0;
    GDALAdjustValueToDataType(type, nodata, &clamped, &rounded);
    if (clamped || rounded) {
      char text[32];
      std::snprintf(text, sizeof text, "%.15g", nodata);
      throw Error("NODATA", std::string(text) + " is not a value the input's " +
                                GDALGetDataTypeName(type) +
                                " samples can hold, so none could be it");
    }
  }
}

}  // namespace

JobInput openJobInput(const std::string& path, const BandList& requestedBands,
                      const BandExclusions& exclude, std::optional<double> nodata,
                      const std::string& job) {
  JobInput input;
  input.dataset = openRaster(path, "INPUT");
  GDALDataset& dataset = *input.dataset;
  // Raw layouts (ENVI, EHdr, uncompressed GeoTIFF, ...) read the missing end of a truncated file
  // as zeros, without an error: check that the file holds every byte its header describes.
  GDALDataset::RawBinaryLayout layout;
  VSIStatBufL stat;
  if (dataset.GetRawBinaryLayout(layout) && VSIStatL(layout.osRawFilename.c_str(), &stat) == 0) {
    auto span = [](int64_t count, GIntBig step) {
      return std::max<int64_t>(0, (count - 1) * step);
    };
    const int64_t needed = static_cast<int64_t>(layout.nImageOffset) +
                           span(dataset.GetRasterXSize(), layout.nPixelOffset) +
                           span(dataset.GetRasterYSize(), layout.nLineOffset) +
                           span(dataset.GetRasterCount(), layout.nBandOffset) +
                           GDALGetDataTypeSizeBytes(layout.eDataType);
    if (static_cast<int64_t>(stat.st_size) < needed)
      throw Error("INPUT", "'" + layout.osRawFilename + "' is truncated: its header describes " +
                               std::to_string(needed) + " bytes, the file has " +
                               std::to_string(stat.st_size) + " (damaged or not fully copied?)");
  }
  input.info = describeRaster(dataset, path);
  if (nodata) std::fill(input.info.nodata.begin(), input.info.nodata.end(), *nodata);
  if (!nodata && !input.info.nodataProblem.empty())
    throw Error("INPUT", input.info.nodataProblem +
                             ": correct the header, or give the fill value as NODATA");
  input.bands = selectBands(requestedBands, input.info.bandCount, job);
  excludeBands(input.bands, input.info, exclude);
  std::vector<GDALDataType> types;
  for (int b : input.bands) {
    const GDALDataType type = input.info.bandTypes[b - 1];
    if (GDALDataTypeIsComplex(type))
      throw Error(requestedBands.empty() ? "INPUT" : "BANDS",
                  "band " + std::to_string(b) + " holds complex data (" +
                      GDALGetDataTypeName(type) + "), which is not supported");
    types.push_back(type);
    input.nodata.push_back(input.info.nodata[b - 1]);
  }
  input.info.type = commonType(types);
  input.sampleType = sampleTypeOf(input.info.type);
  if (nodata) checkDeclaredNodata(*nodata, types);
  return input;
}

JobInput openJobInput(const JobOptions& options, const BandList& bands, const std::string& job,
                      Feedback& feedback) {
  JobInput input = openJobInput(options.input, bands, options.exclude, options.nodata, job);
  if (options.orthorectify) requestOrthorectification(input.info, options.ramBytes);
  if (const std::string summary = productSummary(input.info); !summary.empty())
    feedback.info(QString::fromStdString(summary));
  if (!input.info.wavelengthProblem.empty())
    feedback.warning(QString::fromStdString("No wavelengths: " + input.info.wavelengthProblem));
  return input;
}

}  // namespace hyperstream
