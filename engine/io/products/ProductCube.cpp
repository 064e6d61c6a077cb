#include "io/products/ProductCube.h"

#include "core/Samples.h"

#include <cpl_string.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace hyperstream {

// How one band's raw samples become what the view presents.
struct Presentation {
  bool applies = false;  // else the raw sample is presented as it is
  double scale = 1, divisor = 1, offset = 0;
  std::optional<double> fill;
  double nodata = 0;
  bool roundToFloat = false;  // the view is Float32: a Float64 buffer holds what Float32 would

  double operator()(double raw) const {
    if (!applies) return raw;
    double value = fill && raw == *fill ? nodata : offset + raw * scale / divisor;
    return roundToFloat ? static_cast<float>(value) : value;
  }
};

namespace {

std::string metadataNumber(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.10g", value);
  return text;
}

bool isScaled(const PresentedBand& band) {
  return band.scale != 1 || band.divisor != 1 || band.offset != 0;
}

// The bands' samples (already at the buffer's type T) presented in place, in one pass in pixel
// order.
template <typename T>
void presentSamples(unsigned char* data, int width, int height, GSpacing pixelSpace,
                    GSpacing lineSpace, GSpacing bandSpace,
                    const std::vector<Presentation>& bands) {
  const auto count = static_cast<int>(bands.size());
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      unsigned char* pixel = data + y * lineSpace + x * pixelSpace;
      for (int i = 0; i < count; ++i)
        if (bands[i].applies) {
          T* sample = reinterpret_cast<T*>(pixel + i * bandSpace);
          *sample = static_cast<T>(bands[i](*sample));
        }
    }
}

// `count` samples of one band presented, from `in` to `out`, both contiguous: a loop the compiler
// vectorises (the division too: the product's formula, exactly), inlined into gather's clones
// for the CPU's vectors.
template <typename In, typename T>
__attribute__((always_inline)) inline void presentRow(const In* in, size_t count,
                                                      const Presentation& band, T* out) {
  if (!band.applies) {
    std::copy(in, in + count, out);
    return;
  }
  const double fill = band.fill ? *band.fill : std::nan("");  // NaN: equal to nothing
  const double scale = band.scale, divisor = band.divisor, offset = band.offset;
  const double nodata = band.nodata;
  if (band.roundToFloat) {
    for (size_t k = 0; k < count; ++k) {
      const double raw = in[k];
      const double value = raw == fill ? nodata : offset + raw * scale / divisor;
      out[k] = static_cast<T>(static_cast<float>(value));
    }
  } else {
    for (size_t k = 0; k < count; ++k) {
      const double raw = in[k];
      out[k] = static_cast<T>(raw == fill ? nodata : offset + raw * scale / divisor);
    }
  }
}

// One band of an array's samples read into scratch: where it lies there, where it goes in the
// request's buffer (in samples), and how it is presented.
struct Gathered {
  int64_t from;  // offset in scratch
  int64_t to;    // offset in the buffer
  Presentation presentation;
};

// The bands `bands` of scratch (a row of pixel r, column c at r * rowStep + c * columnStep) into
// the buffer at its spacing (in samples), presented. Bands go 16 at a time and pixels 256 at a
// time: each band's pixels presented together (a loop the compiler vectorises), then each pixel's
// 16 bands written together, so that a transpose (PRISMA's bands x columns rows into
// pixel-interleaved ones) touches the buffer a pixel's run of bands at a time.
template <typename In, typename T>
HYPERSTREAM_VECTOR_CLONES void gather(const In* in, int64_t rowStep, int64_t columnStep,
                                      const std::vector<Gathered>& bands, int height, int width,
                                      T* out, int64_t lineStep, int64_t pixelStep) {
  constexpr int kBands = 16, kPixels = 256;
  T row[kPixels];
  T tile[kPixels][kBands];
  In strided[kPixels];
  const auto count = static_cast<int>(bands.size());
  for (int r = 0; r < height; ++r)
    for (int b0 = 0; b0 < count; b0 += kBands)
      for (int c0 = 0; c0 < width; c0 += kPixels) {
        const int group = std::min(kBands, count - b0), pixels = std::min(kPixels, width - c0);
        for (int b = 0; b < group; ++b) {
          const Gathered& band = bands[b0 + b];
          const In* from = in + r * rowStep + c0 * columnStep + band.from;
          if (columnStep != 1) {
            for (int k = 0; k < pixels; ++k) strided[k] = from[k * columnStep];
            from = strided;
          }
          presentRow(from, static_cast<size_t>(pixels), band.presentation, row);
          for (int k = 0; k < pixels; ++k) tile[k][b] = row[k];
        }
        // Bands that lie side by side in the buffer (as they do unless two sources interleave)
        // are one copy per pixel.
        const int64_t to = bands[b0].to;
        bool adjacent = true;
        for (int b = 1; b < group && adjacent; ++b) adjacent = bands[b0 + b].to == to + b;
        for (int k = 0; k < pixels; ++k) {
          T* pixel = out + r * lineStep + (c0 + k) * pixelStep;
          if (adjacent && group == kBands)
            std::memcpy(pixel + to, tile[k], sizeof tile[k]);  // of constant size: vector moves
          else
            for (int b = 0; b < group; ++b) pixel[bands[b0 + b].to] = tile[k][b];
        }
      }
}

template <typename T>
void gatherAs(const unsigned char* in, GDALDataType rawType, int64_t rowStep, int64_t columnStep,
              const std::vector<Gathered>& bands, int height, int width, unsigned char* out,
              int64_t lineStep, int64_t pixelStep) {
  const auto as = [&](auto sample) {
    using In = decltype(sample);
    gather(reinterpret_cast<const In*>(in), rowStep, columnStep, bands, height, width,
           reinterpret_cast<T*>(out), lineStep, pixelStep);
  };
  switch (rawType) {
    case GDT_Byte:
      return as(uint8_t{});
    case GDT_UInt16:
      return as(uint16_t{});
    case GDT_Int16:
      return as(int16_t{});
    case GDT_UInt32:
      return as(uint32_t{});
    case GDT_Int32:
      return as(int32_t{});
    case GDT_Float32:
      return as(float{});
    default:
      return as(double{});
  }
}

// gather for samples only moved (an integer buffer, in the array's type already): words of the
// samples' size.
void gatherWords(const unsigned char* in, int size, int64_t rowStep, int64_t columnStep,
                 const std::vector<Gathered>& bands, int height, int width, unsigned char* out,
                 int64_t lineStep, int64_t pixelStep) {
  const auto as = [&](auto word) {
    using Word = decltype(word);
    gather(reinterpret_cast<const Word*>(in), rowStep, columnStep, bands, height, width,
           reinterpret_cast<Word*>(out), lineStep, pixelStep);
  };
  switch (size) {
    case 1:
      return as(uint8_t{});
    case 2:
      return as(uint16_t{});
    case 4:
      return as(uint32_t{});
    default:
      return as(uint64_t{});
  }
}

bool isPlainNumeric(const GDALExtendedDataType& type) {
  if (type.GetClass() != GEDTC_NUMERIC) return false;
  switch (type.GetNumericDataType()) {
    case GDT_Byte:
    case GDT_UInt16:
    case GDT_Int16:
    case GDT_UInt32:
    case GDT_Int32:
    case GDT_Float32:
    case GDT_Float64:
      return true;
    default:
      return false;
  }
}

}  // namespace

// One band of the view; its reads go through the dataset's, a row per block.
class ProductBand : public GDALRasterBand {
 public:
  ProductBand(ProductDataset* dataset, int number) {
    poDS = dataset;
    nBand = number;
    const ProductCube& cube = dataset->cube();
    eDataType = cube.type;
    nRasterXSize = static_cast<int>(cube.width);
    nRasterYSize = static_cast<int>(cube.height);
    nBlockXSize = nRasterXSize;
    nBlockYSize = 1;
    const PresentedBand& band = cube.bands[number - 1];
    SetDescription(band.description.c_str());
    if (!std::isnan(band.wavelength)) {
      GDALRasterBand::SetMetadataItem("wavelength", metadataNumber(band.wavelength).c_str());
      GDALRasterBand::SetMetadataItem("wavelength_units", "Nanometers");
    }
    if (!std::isnan(band.fwhm))
      GDALRasterBand::SetMetadataItem("fwhm", metadataNumber(band.fwhm).c_str());
    GDALRasterBand::SetMetadataItem("bbl", band.good ? "1" : "0");
  }
  double GetNoDataValue(int* has) override {
    const auto& nodata = static_cast<ProductDataset*>(poDS)->cube().nodata;
    if (has) *has = nodata.has_value();
    return nodata.value_or(0.0);
  }

 protected:
  CPLErr IReadBlock(int, int blockRow, void* data) override {
    const int bands[1] = {nBand};
    const int size = GDALGetDataTypeSizeBytes(eDataType);
    auto* dataset = static_cast<ProductDataset*>(poDS);
    return dataset->readBands(bands, 1, 0, blockRow, nBlockXSize, 1,
                              static_cast<unsigned char*>(data), eDataType, size,
                              static_cast<GSpacing>(size) * nBlockXSize, 0)
               ? CE_None
               : CE_Failure;
  }
  CPLErr IRasterIO(GDALRWFlag flag, int x0, int y0, int width, int height, void* data,
                   int bufferWidth, int bufferHeight, GDALDataType bufferType, GSpacing pixelSpace,
                   GSpacing lineSpace, GDALRasterIOExtraArg* extra) override {
    const int bands[1] = {nBand};
    auto* dataset = static_cast<ProductDataset*>(poDS);
    if (flag == GF_Read && bufferWidth == width && bufferHeight == height &&
        dataset->readBands(bands, 1, x0, y0, width, height, static_cast<unsigned char*>(data),
                           bufferType, pixelSpace, lineSpace, 0))
      return CE_None;
    return GDALRasterBand::IRasterIO(flag, x0, y0, width, height, data, bufferWidth, bufferHeight,
                                     bufferType, pixelSpace, lineSpace, extra);
  }
};

ProductDataset::ProductDataset(ProductCube cube) : cube_(std::move(cube)) {
  nRasterXSize = static_cast<int>(cube_.width);
  nRasterYSize = static_cast<int>(cube_.height);
  eAccess = GA_ReadOnly;
  SetDescription(cube_.files.empty() ? cube_.product.c_str() : cube_.files.front().c_str());
  for (int b = 1; b <= static_cast<int>(cube_.bands.size()); ++b)
    SetBand(b, new ProductBand(this, b));
  GDALDataset::SetMetadataItem("INTERLEAVE", "PIXEL", "IMAGE_STRUCTURE");
  GDALDataset::SetMetadataItem("PRODUCT", cube_.product.c_str());
  if (!cube_.crsWkt.empty()) {
    crs_.SetAxisMappingStrategy(OAMS_TRADITIONAL_GIS_ORDER);
    crs_.importFromWkt(cube_.crsWkt.c_str());
  }
}

char** ProductDataset::GetFileList() {
  CPLStringList files;
  for (const std::string& file : cube_.files) files.AddString(file.c_str());
  return files.StealList();
}

#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 12, 0)
CPLErr ProductDataset::GetGeoTransform(GDALGeoTransform& transform) const {
#else
CPLErr ProductDataset::GetGeoTransform(double* transform) {
#endif
  if (!cube_.hasGeoTransform) return CE_Failure;
  for (int k = 0; k < 6; ++k) transform[k] = cube_.geoTransform[static_cast<size_t>(k)];
  return CE_None;
}

const OGRSpatialReference* ProductDataset::GetSpatialRef() const {
  return crs_.IsEmpty() ? nullptr : &crs_;
}

CPLErr ProductDataset::IRasterIO(GDALRWFlag flag, int x0, int y0, int width, int height, void* data,
                                 int bufferWidth, int bufferHeight, GDALDataType bufferType,
                                 int bandCount, BandMap bandMap, GSpacing pixelSpace,
                                 GSpacing lineSpace, GSpacing bandSpace,
                                 GDALRasterIOExtraArg* extra) {
  const bool direct =
      flag == GF_Read && bufferWidth == width && bufferHeight == height &&
      readBands(bandMap, bandCount, x0, y0, width, height, static_cast<unsigned char*>(data),
                bufferType, pixelSpace, lineSpace, bandSpace);
  if (direct) return CE_None;
  return GDALDataset::IRasterIO(flag, x0, y0, width, height, data, bufferWidth, bufferHeight,
                                bufferType, bandCount, bandMap, pixelSpace, lineSpace, bandSpace,
                                extra);
}

bool ProductDataset::readBands(const int* bandMap, int bandCount, int x0, int y0, int width,
                               int height, unsigned char* data, GDALDataType bufferType,
                               GSpacing pixelSpace, GSpacing lineSpace, GSpacing bandSpace) {
  const int size = GDALGetDataTypeSizeBytes(bufferType);
  if (pixelSpace <= 0 || lineSpace <= 0 || bandSpace < 0 || pixelSpace % size || lineSpace % size ||
      bandSpace % size)
    return false;
  // What each band needs after its raw samples are read: scaling, fill made nodata.
  std::vector<Presentation> presented(static_cast<size_t>(bandCount));
  bool any = false;
  for (int i = 0; i < bandCount; ++i) {
    const PresentedBand& band = cube_.bands[bandMap[i] - 1];
    const std::optional<double>& fill = cube_.sources[band.source].fill;
    const bool fillChanges = fill && cube_.nodata && *fill != *cube_.nodata;
    if (!isScaled(band) && !fillChanges) continue;
    presented[i] = {true,
                    band.scale,
                    band.divisor,
                    band.offset,
                    fill,
                    cube_.nodata.value_or(0.0),
                    cube_.type == GDT_Float32};
    any = true;
  }
  if (any && bufferType != GDT_Float32 && bufferType != GDT_Float64) return false;
  // Each source once per request: an array's bands in one read, a raster's in runs.
  std::vector<std::vector<int>> bySource(cube_.sources.size());
  for (int i = 0; i < bandCount; ++i) bySource[cube_.bands[bandMap[i] - 1].source].push_back(i);
  const Request request{x0, y0, width, height, data, bufferType, pixelSpace, lineSpace, bandSpace};
  for (size_t s = 0; s < bySource.size(); ++s) {
    if (bySource[s].empty()) continue;
    const bool read = cube_.sources[s].array
                          ? readArray(cube_.sources[s], bandMap, bySource[s], request, presented)
                          : readRaster(cube_.sources[s], bandMap, bySource[s], request);
    if (!read) return false;
  }
  // Bands presented while laid out are done.
  if (std::none_of(presented.begin(), presented.end(),
                   [](const Presentation& p) { return p.applies; }))
    return true;
  if (bufferType == GDT_Float32)
    presentSamples<float>(data, width, height, pixelSpace, lineSpace, bandSpace, presented);
  else
    presentSamples<double>(data, width, height, pixelSpace, lineSpace, bandSpace, presented);
  return true;
}

bool ProductDataset::readArray(const CubeSource& source, const int* bandMap,
                               const std::vector<int>& positions, const Request& request,
                               std::vector<Presentation>& presented) {
  const int size = GDALGetDataTypeSizeBytes(request.bufferType);
  int64_t lowest = std::numeric_limits<int64_t>::max(), highest = -1;
  for (int i : positions) {
    lowest = std::min(lowest, cube_.bands[bandMap[i] - 1].index);
    highest = std::max(highest, cube_.bands[bandMap[i] - 1].index);
  }
  GUInt64 start[3];
  size_t counts[3];
  GPtrDiff_t strides[3];  // of the request's buffer, in samples
  start[source.rowDim] = static_cast<GUInt64>(request.y0);
  counts[source.rowDim] = static_cast<size_t>(request.height);
  strides[source.rowDim] = request.lineSpace / size;
  start[source.columnDim] = static_cast<GUInt64>(request.x0);
  counts[source.columnDim] = static_cast<size_t>(request.width);
  strides[source.columnDim] = request.pixelSpace / size;
  start[source.bandDim] = static_cast<GUInt64>(lowest);
  counts[source.bandDim] = static_cast<size_t>(highest - lowest + 1);
  strides[source.bandDim] = request.bandSpace / size;

  // The buffer in the array's own order (EMIT's cube read whole into pixel-interleaved strips):
  // read straight into it.
  bool inOrder = static_cast<int64_t>(positions.size()) == highest - lowest + 1;
  for (size_t k = 0; k < positions.size() && inOrder; ++k)
    inOrder = positions[k] == positions[0] + static_cast<int>(k) &&
              cube_.bands[bandMap[positions[k]] - 1].index == lowest + static_cast<int64_t>(k);
  const bool natural = (counts[2] == 1 || strides[2] == 1) &&
                       (counts[1] == 1 || strides[1] == static_cast<GPtrDiff_t>(counts[2])) &&
                       (counts[0] == 1 || strides[0] == static_cast<GPtrDiff_t>(counts[1]) *
                                                            static_cast<GPtrDiff_t>(counts[2]));
  const auto index = static_cast<size_t>(&source - cube_.sources.data());
  if (inOrder && natural)
    return readBlock(index, start, counts, request.bufferType,
                     request.data + positions[0] * request.bandSpace);

  // Otherwise the range of bands is read into scratch as the file holds it (DN: half the bytes of
  // Float32; one read, not one per band), and gathered from there, presented on the way.
  // Into an integer buffer (nothing to present then, readBands made sure) GDAL converts while
  // reading, and the samples are only moved.
  const bool floating = request.bufferType == GDT_Float32 || request.bufferType == GDT_Float64;
  const GDALDataType rawType = floating && isPlainNumeric(source.array->GetDataType())
                                   ? source.array->GetDataType().GetNumericDataType()
                                   : request.bufferType;
  scratch_.resize(counts[0] * counts[1] * counts[2] *
                  static_cast<size_t>(GDALGetDataTypeSizeBytes(rawType)));
  if (!readBlock(index, start, counts, rawType, scratch_.data())) return false;
  const int64_t steps[3] = {static_cast<int64_t>(counts[1] * counts[2]),
                            static_cast<int64_t>(counts[2]), 1};  // scratch's, C order
  std::vector<Gathered> bands;
  for (int i : positions) {
    const int64_t index = cube_.bands[bandMap[i] - 1].index;
    bands.push_back(
        {(index - lowest) * steps[source.bandDim], i * request.bandSpace / size, presented[i]});
    presented[i].applies = false;  // presented here
  }
  const int64_t lineStep = request.lineSpace / size, pixelStep = request.pixelSpace / size;
  if (request.bufferType == GDT_Float32)
    gatherAs<float>(scratch_.data(), rawType, steps[source.rowDim], steps[source.columnDim], bands,
                    request.height, request.width, request.data, lineStep, pixelStep);
  else if (request.bufferType == GDT_Float64)
    gatherAs<double>(scratch_.data(), rawType, steps[source.rowDim], steps[source.columnDim], bands,
                     request.height, request.width, request.data, lineStep, pixelStep);
  else
    gatherWords(scratch_.data(), size, steps[source.rowDim], steps[source.columnDim], bands,
                request.height, request.width, request.data, lineStep, pixelStep);
  return true;
}

bool ProductDataset::readBlock(size_t source, const GUInt64 start[3], const size_t counts[3],
                               GDALDataType type, unsigned char* out) {
  const CubeSource& from = cube_.sources[source];
  if (!from.stored || from.stored->type != type)
    return from.array->Read(start, counts, nullptr, nullptr, GDALExtendedDataType::Create(type),
                            out);
  storedFiles_.resize(cube_.sources.size());
  auto& file = storedFiles_[source];
  if (!file) file.reset(VSIFOpenL(from.stored->file.c_str(), "rb"));
  if (!file) return false;
  const uint64_t first[3] = {start[0], start[1], start[2]};
  if (readStored(file.get(), *from.stored, first, counts, out)) return true;
  CPLError(CE_Failure, CPLE_FileIO, "'%s' is shorter than its HDF5 metadata says",
           from.stored->file.c_str());
  return false;
}

bool ProductDataset::readRaster(const CubeSource& source, const int* bandMap,
                                const std::vector<int>& positions, const Request& request) {
  // Runs: consecutive positions whose bands step by one along the raster's bands.
  for (size_t first = 0; first < positions.size();) {
    size_t count = 1;
    while (first + count < positions.size() &&
           positions[first + count] == positions[first] + static_cast<int>(count) &&
           cube_.bands[bandMap[positions[first + count]] - 1].index ==
               cube_.bands[bandMap[positions[first]] - 1].index + static_cast<int64_t>(count))
      ++count;
    std::vector<int> bands(count);
    for (size_t k = 0; k < count; ++k)
      bands[k] = static_cast<int>(cube_.bands[bandMap[positions[first + k]] - 1].index) + 1;
    if (source.raster->RasterIO(GF_Read, request.x0, request.y0, request.width, request.height,
                                request.data + positions[first] * request.bandSpace, request.width,
                                request.height, request.bufferType, static_cast<int>(count),
                                bands.data(), request.pixelSpace, request.lineSpace,
                                request.bandSpace, nullptr) != CE_None)
      return false;
    first += count;
  }
  // Strips come in order: once one ends on a row of blocks, those blocks are done with.
  int blockWidth = 0, blockHeight = 1;
  source.raster->GetRasterBand(1)->GetBlockSize(&blockWidth, &blockHeight);
  if ((request.y0 + request.height) % std::max(1, blockHeight) == 0)
    source.raster->FlushCache(false);
  return true;
}

}  // namespace hyperstream
