#include "io/products/ProductCube.h"

#include <cpl_string.h>

#include <algorithm>
#include <cmath>
#include <cstring>

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
// vectorises (the division too: the product's formula, exactly).
template <typename In, typename T>
void presentRow(const In* in, size_t count, const Presentation& band, T* out) {
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

// Samples of `counts` in C order at `in` to `out` at `strides` (in samples), presented on the
// way: `byBand[b]` for the b-th index along dimension `bandDim`. The two inner dimensions go in
// tiles, transposed in the cache, so that a transpose (PRISMA's bands x columns rows into
// pixel-interleaved ones) writes each pixel's bands of the tile as one run.
template <typename In, typename T>
void layOutPresented(const In* in, const size_t counts[3], const GPtrDiff_t strides[3], T* out,
                     size_t bandDim, const Presentation* byBand) {
  constexpr size_t kRows = 16, kColumns = 256;
  T row[kColumns];
  T tile[kColumns][kRows];  // the tile transposed: [k][j]
  const size_t plane = counts[1] * counts[2];
  for (size_t i = 0; i < counts[0]; ++i)
    for (size_t j0 = 0; j0 < counts[1]; j0 += kRows)
      for (size_t k0 = 0; k0 < counts[2]; k0 += kColumns) {
        const size_t rows = std::min(kRows, counts[1] - j0);
        const size_t columns = std::min(kColumns, counts[2] - k0);
        for (size_t j = 0; j < rows; ++j) {
          const In* from = in + i * plane + (j0 + j) * counts[2] + k0;
          if (bandDim == 2) {
            for (size_t k = 0; k < columns; ++k) row[k] = static_cast<T>(byBand[k0 + k](from[k]));
          } else {
            presentRow(from, columns, byBand[bandDim == 0 ? i : j0 + j], row);
          }
          for (size_t k = 0; k < columns; ++k) tile[k][j] = row[k];
        }
        for (size_t k = 0; k < columns; ++k) {
          T* first = out + i * strides[0] + j0 * strides[1] + (k0 + k) * strides[2];
          if (strides[1] == 1)
            std::copy(tile[k], tile[k] + rows, first);
          else if (strides[1] == -1)
            std::reverse_copy(tile[k], tile[k] + rows, first - (rows - 1));
          else
            for (size_t j = 0; j < rows; ++j) first[j * strides[1]] = tile[k][j];
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

// layOutPresented for samples of `rawType` into a buffer of `bufferType` (Float32 or Float64).
template <typename T>
void layOutPresentedAs(const unsigned char* in, GDALDataType rawType, const size_t counts[3],
                       const GPtrDiff_t strides[3], T* out, size_t bandDim,
                       const Presentation* byBand) {
  const auto as = [&](auto sample) {
    using In = decltype(sample);
    layOutPresented(reinterpret_cast<const In*>(in), counts, strides, out, bandDim, byBand);
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

void layOutPresented(const unsigned char* in, GDALDataType rawType, const size_t counts[3],
                     const GPtrDiff_t strides[3], unsigned char* out, GDALDataType bufferType,
                     size_t bandDim, const Presentation* byBand) {
  if (bufferType == GDT_Float32)
    layOutPresentedAs(in, rawType, counts, strides, reinterpret_cast<float*>(out), bandDim, byBand);
  else
    layOutPresentedAs(in, rawType, counts, strides, reinterpret_cast<double*>(out), bandDim,
                      byBand);
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
                    lineSpace, bandSpace, any ? presented.data() + first : nullptr))
      return false;
    first += count;
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

bool ProductDataset::readSource(const CubeSource& source, int64_t index, int64_t step, int count,
                                int x0, int y0, int width, int height, unsigned char* data,
                                GDALDataType bufferType, GSpacing pixelSpace, GSpacing lineSpace,
                                GSpacing bandSpace, Presentation* presentation) {
  const int size = GDALGetDataTypeSizeBytes(bufferType);
  if (source.array) {
    // Read from the lowest band index up (HDF5 has no negative strides: GDAL would read a
    // descending run sample by sample), laying a descending run out from its last band back.
    int64_t lowest = index;
    GPtrDiff_t bandStride = bandSpace / size;
    unsigned char* base = data;
    if (count > 1 && step < 0) {
      lowest = index - (count - 1);
      base = data + (count - 1) * bandSpace;
      bandStride = -bandStride;
    }
    GUInt64 start[3];
    size_t counts[3];
    GPtrDiff_t strides[3];
    start[source.rowDim] = static_cast<GUInt64>(y0);
    counts[source.rowDim] = static_cast<size_t>(height);
    strides[source.rowDim] = lineSpace / size;
    start[source.columnDim] = static_cast<GUInt64>(x0);
    counts[source.columnDim] = static_cast<size_t>(width);
    strides[source.columnDim] = pixelSpace / size;
    start[source.bandDim] = static_cast<GUInt64>(lowest);
    counts[source.bandDim] = static_cast<size_t>(count);
    strides[source.bandDim] = bandStride;
    const auto type = GDALExtendedDataType::Create(bufferType);
    // The buffer in the array's own order (EMIT's cube read whole into pixel-interleaved strips)
    // is read into directly. Otherwise the array's order is read into scratch and laid out here:
    // GDAL 3.6's HDF5 driver writes one sample only of a strided read with a dimension of 1.
    const bool natural =
        (counts[2] == 1 || strides[2] == 1) &&
        (counts[1] == 1 || strides[1] == static_cast<GPtrDiff_t>(counts[2])) &&
        (counts[0] == 1 || strides[0] == static_cast<GPtrDiff_t>(counts[1] * counts[2]));
    if (natural) return source.array->Read(start, counts, nullptr, nullptr, type, data);
    // Presented on the way, the samples are read as the file holds them (DN: half the bytes of
    // Float32, and no conversion by HDF5 first).
    const GDALDataType rawType = presentation && isPlainNumeric(source.array->GetDataType())
                                     ? source.array->GetDataType().GetNumericDataType()
                                     : bufferType;
    scratch_.resize(counts[0] * counts[1] * counts[2] *
                    static_cast<size_t>(GDALGetDataTypeSizeBytes(rawType)));
    if (!source.array->Read(start, counts, nullptr, nullptr, GDALExtendedDataType::Create(rawType),
                            scratch_.data()))
      return false;
    if (presentation) {
      // Presented while laid out; the pass over the whole request then leaves these bands be.
      std::vector<Presentation> byBand(presentation, presentation + count);
      if (count > 1 && step < 0) std::reverse(byBand.begin(), byBand.end());
      layOutPresented(scratch_.data(), rawType, counts, strides, base, bufferType, source.bandDim,
                      byBand.data());
      for (int i = 0; i < count; ++i) presentation[i].applies = false;
      return true;
    }
    switch (size) {
      case 1:
        layOut<uint8_t>(scratch_.data(), counts, strides, base);
        break;
      case 2:
        layOut<uint16_t>(scratch_.data(), counts, strides, base);
        break;
      case 4:
        layOut<uint32_t>(scratch_.data(), counts, strides, base);
        break;
      default:
        layOut<uint64_t>(scratch_.data(), counts, strides, base);
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
