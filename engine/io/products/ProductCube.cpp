#include "io/products/ProductCube.h"

#include <cpl_string.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hyperstream {

namespace {

std::string metadataNumber(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.10g", value);
  return text;
}

bool isScaled(const PresentedBand& band) {
  return band.scale != 1 || band.divisor != 1 || band.offset != 0;
}

// Raw samples (already at the buffer's type T) in physical units, fill as nodata, for the bands
// that need it, in one pass in pixel order. Values are rounded to the presented type first, so a
// Float64 buffer holds what a Float32 one would.
template <typename T>
void presentSamples(unsigned char* data, int width, int height, GSpacing pixelSpace,
                    GSpacing lineSpace, GSpacing bandSpace,
                    const std::vector<const PresentedBand*>& bands,
                    const std::vector<std::optional<double>>& fills, double nodata,
                    bool roundToFloat) {
  const auto count = static_cast<int>(bands.size());
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      unsigned char* pixel = data + y * lineSpace + x * pixelSpace;
      for (int i = 0; i < count; ++i) {
        if (!bands[i]) continue;
        T* sample = reinterpret_cast<T*>(pixel + i * bandSpace);
        const double raw = *sample;
        const PresentedBand& band = *bands[i];
        double value =
            fills[i] && raw == *fills[i] ? nodata : band.offset + raw * band.scale / band.divisor;
        if (roundToFloat) value = static_cast<float>(value);
        *sample = static_cast<T>(value);
      }
    }
}

// Samples of `counts` in C order at `from` to `to` at `strides` (in samples): a transpose.
template <typename Word>
void layOut(const unsigned char* from, const size_t counts[3], const GPtrDiff_t strides[3],
            unsigned char* to) {
  const auto* in = reinterpret_cast<const Word*>(from);
  auto* out = reinterpret_cast<Word*>(to);
  for (size_t i = 0; i < counts[0]; ++i)
    for (size_t j = 0; j < counts[1]; ++j) {
      Word* row = out + i * strides[0] + j * strides[1];
      for (size_t k = 0; k < counts[2]; ++k) row[k * strides[2]] = *in++;
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

CPLErr ProductDataset::GetGeoTransform(double* transform) {
  if (!cube_.hasGeoTransform) return CE_Failure;
  std::copy(cube_.geoTransform.begin(), cube_.geoTransform.end(), transform);
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
  std::vector<const PresentedBand*> presented(static_cast<size_t>(bandCount), nullptr);
  std::vector<std::optional<double>> fills(static_cast<size_t>(bandCount));
  bool any = false;
  for (int i = 0; i < bandCount; ++i) {
    const PresentedBand& band = cube_.bands[bandMap[i] - 1];
    const std::optional<double>& fill = cube_.sources[band.source].fill;
    const bool fillChanges = fill && cube_.nodata && *fill != *cube_.nodata;
    if (!isScaled(band) && !fillChanges) continue;
    presented[i] = &band;
    fills[i] = fill;
    any = true;
  }
  if (any && bufferType != GDT_Float32 && bufferType != GDT_Float64) return false;
  const auto band = [&](int i) -> const PresentedBand& { return cube_.bands[bandMap[i] - 1]; };
  for (int first = 0; first < bandCount;) {
    // A run: consecutive bands of one source, a step of +1 or -1 along its band axis.
    int count = 1;
    int64_t step = 0;
    while (first + count < bandCount) {
      const int64_t next = band(first + count).index - band(first + count - 1).index;
      if (band(first + count).source != band(first).source || std::abs(next) != 1 ||
          (step != 0 && next != step))
        break;
      step = next;
      ++count;
    }
    if (!readSource(cube_.sources[band(first).source], band(first).index, step == 0 ? 1 : step,
                    count, x0, y0, width, height, data + first * bandSpace, bufferType, pixelSpace,
                    lineSpace, bandSpace))
      return false;
    first += count;
  }
  if (!any) return true;
  const double nodata = cube_.nodata.value_or(0.0);
  const bool roundToFloat = cube_.type == GDT_Float32;
  if (bufferType == GDT_Float32)
    presentSamples<float>(data, width, height, pixelSpace, lineSpace, bandSpace, presented, fills,
                          nodata, roundToFloat);
  else
    presentSamples<double>(data, width, height, pixelSpace, lineSpace, bandSpace, presented, fills,
                           nodata, roundToFloat);
  return true;
}

bool ProductDataset::readSource(const CubeSource& source, int64_t index, int64_t step, int count,
                                int x0, int y0, int width, int height, unsigned char* data,
                                GDALDataType bufferType, GSpacing pixelSpace, GSpacing lineSpace,
                                GSpacing bandSpace) {
  const int size = GDALGetDataTypeSizeBytes(bufferType);
  if (source.array) {
    GUInt64 start[3];
    size_t counts[3];
    GInt64 steps[3] = {1, 1, 1};
    GPtrDiff_t strides[3];
    start[source.rowDim] = static_cast<GUInt64>(y0);
    counts[source.rowDim] = static_cast<size_t>(height);
    strides[source.rowDim] = lineSpace / size;
    start[source.columnDim] = static_cast<GUInt64>(x0);
    counts[source.columnDim] = static_cast<size_t>(width);
    strides[source.columnDim] = pixelSpace / size;
    start[source.bandDim] = static_cast<GUInt64>(index);
    counts[source.bandDim] = static_cast<size_t>(count);
    steps[source.bandDim] = count > 1 ? step : 1;
    strides[source.bandDim] = bandSpace / size;
    const auto type = GDALExtendedDataType::Create(bufferType);
    // The buffer in the array's own order (EMIT's cube read whole into pixel-interleaved strips)
    // is read into directly. Otherwise the array's order is read into scratch and laid out here:
    // GDAL 3.6's HDF5 driver writes one sample only of a strided read with a dimension of 1.
    const bool natural = strides[2] == 1 && strides[1] == static_cast<GPtrDiff_t>(counts[2]) &&
                         strides[0] == static_cast<GPtrDiff_t>(counts[1] * counts[2]);
    if (natural) return source.array->Read(start, counts, steps, nullptr, type, data);
    scratch_.resize(counts[0] * counts[1] * counts[2] * static_cast<size_t>(size));
    if (!source.array->Read(start, counts, steps, nullptr, type, scratch_.data())) return false;
    switch (size) {
      case 1:
        layOut<uint8_t>(scratch_.data(), counts, strides, data);
        break;
      case 2:
        layOut<uint16_t>(scratch_.data(), counts, strides, data);
        break;
      case 4:
        layOut<uint32_t>(scratch_.data(), counts, strides, data);
        break;
      default:
        layOut<uint64_t>(scratch_.data(), counts, strides, data);
        break;
    }
    return true;
  }
  std::vector<int> bands(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) bands[i] = static_cast<int>(index + i * step) + 1;
  const bool read = source.raster->RasterIO(GF_Read, x0, y0, width, height, data, width, height,
                                            bufferType, count, bands.data(), pixelSpace, lineSpace,
                                            bandSpace, nullptr) == CE_None;
  // Strips come in order: once one ends on a row of blocks, those blocks are done with.
  int blockWidth = 0, blockHeight = 1;
  source.raster->GetRasterBand(1)->GetBlockSize(&blockWidth, &blockHeight);
  if ((y0 + height) % std::max(1, blockHeight) == 0) source.raster->FlushCache(false);
  return read;
}

}  // namespace hyperstream
