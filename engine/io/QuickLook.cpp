#include "io/QuickLook.h"

#include "io/Raster.h"

#include <cpl_vsi.h>

#include <QByteArray>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace hyperstream {

namespace {

// The band read at preview size, NaN where invalid.
std::vector<double> readDecimated(GDALRasterBand& band, int width, int height) {
  std::vector<double> values(static_cast<size_t>(width) * height);
  if (band.RasterIO(GF_Read, 0, 0, band.GetXSize(), band.GetYSize(), values.data(), width, height,
                    GDT_Float64, 0, 0) != CE_None)
    return {};
  int hasNodata = 0;
  const double nodata = band.GetNoDataValue(&hasNodata);
  if (hasNodata)
    for (double& v : values)
      if (v == nodata) v = NAN;
  return values;
}

std::pair<double, double> percentileRange(const std::vector<double>& values) {
  std::vector<double> valid;
  for (double v : values)
    if (std::isfinite(v)) valid.push_back(v);
  if (valid.empty()) return {0, 1};
  const auto at = [&](double q) {
    auto nth = valid.begin() + static_cast<int64_t>(q * static_cast<double>(valid.size() - 1));
    std::nth_element(valid.begin(), nth, valid.end());
    return *nth;
  };
  return {at(0.02), at(0.98)};
}

uint8_t stretched(double v, std::pair<double, double> range) {
  const double span = range.second - range.first;
  const double t = span > 0 ? (v - range.first) / span : 0.5;
  return static_cast<uint8_t>(std::lround(std::clamp(t, 0.0, 1.0) * 255));
}

// The PNG of an RGBA image, through GDAL's PNG driver in memory.
QByteArray encodePng(const std::vector<uint8_t>& rgba, int width, int height) {
  GDALDriver* memory = GetGDALDriverManager()->GetDriverByName("MEM");
  GDALDriver* png = GetGDALDriverManager()->GetDriverByName("PNG");
  if (!memory || !png) return {};
  DatasetPtr image(memory->Create("", width, height, 4, GDT_Byte, nullptr));
  if (!image) return {};
  // rgba is pixel-interleaved: pixel spacing 4, line spacing 4 * width, band spacing 1.
  if (image->RasterIO(GF_Write, 0, 0, width, height, const_cast<uint8_t*>(rgba.data()), width,
                      height, GDT_Byte, 4, nullptr, 4, GSpacing{4} * width, 1) != CE_None)
    return {};
  const CPLString path = CPLSPrintf("/vsimem/hyperstream_quicklook_%p.png", &rgba);
  DatasetPtr written(png->CreateCopy(path, image.get(), FALSE, nullptr, nullptr, nullptr));
  written.reset();  // PNG is written on close
  vsi_l_offset size = 0;
  GByte* bytes = VSIGetMemFileBuffer(path, &size, FALSE);
  QByteArray encoded =
      bytes ? QByteArray(reinterpret_cast<const char*>(bytes), static_cast<int>(size))
            : QByteArray();
  VSIUnlink(path);
  return encoded;
}

// The preview's size for a raster of w x h pixels.
QuickLook previewOf(int w, int h, int longSide) {
  const double scale = std::min(1.0, static_cast<double>(longSide) / std::max(w, h));
  QuickLook look;
  look.width = std::max(1, static_cast<int>(std::lround(w * scale)));
  look.height = std::max(1, static_cast<int>(std::lround(h * scale)));
  return look;
}

// `values` (one per preview pixel, NaN where invalid) in grey, stretched between their 2nd and
// 98th percentiles.
QuickLook greyLook(QuickLook look, const std::vector<double>& values) {
  const std::pair<double, double> stretch = percentileRange(values);
  std::vector<uint8_t> rgba(values.size() * 4, 0);
  for (size_t p = 0; p < values.size(); ++p)
    if (std::isfinite(values[p])) {
      rgba[p * 4] = rgba[p * 4 + 1] = rgba[p * 4 + 2] = stretched(values[p], stretch);
      rgba[p * 4 + 3] = 255;
    }
  const QByteArray png = encodePng(rgba, look.width, look.height);
  if (png.isEmpty()) return {};
  look.dataUrl = "data:image/png;base64," + QString::fromLatin1(png.toBase64());
  return look;
}

}  // namespace

QString QuickLook::img(const QString& alt) const {
  if (dataUrl.isEmpty()) return {};
  return QString("<img src='%1' width='%2' height='%3' alt='%4' style='image-rendering:pixelated'>")
      .arg(dataUrl)
      .arg(width * zoom())
      .arg(height * zoom())
      .arg(alt.toHtmlEscaped());
}

std::vector<int> naturalColourBands(const std::vector<int>& selected,
                                    const std::vector<double>& wavelengths) {
  if (selected.empty()) return {1};
  bool known = true;
  for (int b : selected) known &= std::isfinite(wavelengths[b - 1]);
  std::vector<int> bands;
  if (!known) {
    for (double along : {0.3, 0.2, 0.1})
      bands.push_back(selected[static_cast<size_t>(along * static_cast<double>(selected.size()))]);
    return bands;
  }
  for (double target : {650.0, 550.0, 460.0}) {
    int best = selected.front();
    double nearest = INFINITY;
    for (int b : selected) {
      const double nm = wavelengths[b - 1] < 100 ? wavelengths[b - 1] * 1000 : wavelengths[b - 1];
      if (std::abs(nm - target) < nearest) nearest = std::abs(nm - target), best = b;
    }
    bands.push_back(best);
  }
  return bands;
}

QuickLook makeQuickLook(GDALDataset& dataset, const std::vector<int>& bands, int longSide,
                        std::optional<std::pair<double, double>> range) {
  QuietGdalErrors quiet;
  const int w = dataset.GetRasterXSize(), h = dataset.GetRasterYSize();
  const double scale = std::min(1.0, static_cast<double>(longSide) / std::max(w, h));
  QuickLook look;
  look.width = std::max(1, static_cast<int>(std::lround(w * scale)));
  look.height = std::max(1, static_cast<int>(std::lround(h * scale)));
  const size_t pixels = static_cast<size_t>(look.width) * look.height;
  std::vector<uint8_t> rgba(pixels * 4, 0);
  std::vector<bool> valid(pixels, true);
  for (size_t c = 0; c < bands.size() && c < 3; ++c) {
    const int b = bands[c];
    if (b < 1 || b > dataset.GetRasterCount()) return {};
    const std::vector<double> values =
        readDecimated(*dataset.GetRasterBand(b), look.width, look.height);
    if (values.empty()) return {};
    const std::pair<double, double> stretch = range ? *range : percentileRange(values);
    for (size_t p = 0; p < pixels; ++p) {
      valid[p] = valid[p] && std::isfinite(values[p]);
      rgba[p * 4 + c] = std::isfinite(values[p]) ? stretched(values[p], stretch) : 0;
    }
  }
  if (bands.size() == 1)  // grey: the one band read once, in all three channels
    for (size_t p = 0; p < pixels; ++p) rgba[p * 4 + 1] = rgba[p * 4 + 2] = rgba[p * 4];
  for (size_t p = 0; p < pixels; ++p) rgba[p * 4 + 3] = valid[p] ? 255 : 0;
  const QByteArray png = encodePng(rgba, look.width, look.height);
  if (png.isEmpty()) return {};
  look.dataUrl = "data:image/png;base64," + QString::fromLatin1(png.toBase64());
  return look;
}

QuickLook makeClassQuickLook(GDALDataset& dataset, int longSide) {
  QuietGdalErrors quiet;
  QuickLook look = previewOf(dataset.GetRasterXSize(), dataset.GetRasterYSize(), longSide);
  GDALRasterBand& band = *dataset.GetRasterBand(1);
  const std::vector<double> values = readDecimated(band, look.width, look.height);
  if (values.empty()) return {};
  const GDALColorTable* colours = band.GetColorTable();
  std::vector<uint8_t> rgba(values.size() * 4, 0);
  for (size_t p = 0; p < values.size(); ++p) {
    if (!std::isfinite(values[p])) continue;
    const auto value = static_cast<int>(values[p]);
    const GDALColorEntry* entry =
        colours && value < colours->GetColorEntryCount() ? colours->GetColorEntry(value) : nullptr;
    const GDALColorEntry grey{128, 128, 128, 255};
    const GDALColorEntry& colour = entry ? *entry : grey;
    rgba[p * 4] = static_cast<uint8_t>(colour.c1);
    rgba[p * 4 + 1] = static_cast<uint8_t>(colour.c2);
    rgba[p * 4 + 2] = static_cast<uint8_t>(colour.c3);
    rgba[p * 4 + 3] = static_cast<uint8_t>(colour.c4);
  }
  const QByteArray png = encodePng(rgba, look.width, look.height);
  if (png.isEmpty()) return {};
  look.dataUrl = "data:image/png;base64," + QString::fromLatin1(png.toBase64());
  return look;
}

QuickLook makeDifferenceQuickLook(GDALDataset& a, const std::vector<int>& aBands, GDALDataset& b,
                                  const std::vector<int>& bBands, int longSide) {
  QuietGdalErrors quiet;
  const QuickLook look = previewOf(a.GetRasterXSize(), a.GetRasterYSize(), longSide);
  std::vector<double> squares(static_cast<size_t>(look.width) * look.height, 0.0);
  const size_t count = std::min(aBands.size(), bBands.size());
  for (size_t k = 0; k < count; ++k) {
    if (aBands[k] < 1 || aBands[k] > a.GetRasterCount() || bBands[k] < 1 ||
        bBands[k] > b.GetRasterCount())
      return {};
    const std::vector<double> x =
        readDecimated(*a.GetRasterBand(aBands[k]), look.width, look.height);
    const std::vector<double> y =
        readDecimated(*b.GetRasterBand(bBands[k]), look.width, look.height);
    if (x.empty() || y.empty()) return {};
    for (size_t p = 0; p < squares.size(); ++p) squares[p] += (x[p] - y[p]) * (x[p] - y[p]);
  }
  if (count == 0) return {};
  for (double& value : squares) value = std::sqrt(value / static_cast<double>(count));
  return greyLook(look, squares);
}

}  // namespace hyperstream
