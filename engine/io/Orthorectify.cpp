#include "io/Orthorectify.h"

#include "core/Error.h"
#include "core/Feedback.h"
#include "io/Raster.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

namespace hyperstream {

double mapNodata(GDALDataType type) {
  if (GDALDataTypeIsFloating(type)) return -9999.0;
  switch (type) {
    case GDT_Byte:
      return 255;
    case GDT_UInt16:
      return 65535;
    case GDT_Int16:
      return 32767;
    case GDT_UInt32:
      return 4294967295.0;
    default:
      return 2147483647.0;
  }
}

namespace {

// The image rows [first, last] the cells of map rows [row0, row0 + rows) take values from;
// first > last when they take none.
std::pair<int64_t, int64_t> sourceRows(const Glt& glt, int64_t row0, int64_t rows,
                                       int64_t imageWidth, int64_t imageHeight) {
  int64_t first = std::numeric_limits<int64_t>::max(), last = -1;
  for (int64_t i = row0 * glt.width; i < (row0 + rows) * glt.width; ++i) {
    const int64_t r = glt.row[i] - 1, c = glt.column[i] - 1;
    if (r < 0 || r >= imageHeight || c < 0 || c >= imageWidth) continue;
    first = std::min(first, r);
    last = std::max(last, r);
  }
  return {first, last};
}

}  // namespace

void orthorectify(GDALDataset& image, const Glt& glt, GDALDataset& map, int64_t ramBytes) {
  const int bandCount = image.GetRasterCount();
  const GDALDataType type = image.GetRasterBand(1)->GetRasterDataType();
  const int size = typeSize(type);
  const int64_t pixelBytes = int64_t{bandCount} * size;
  const int64_t imageWidth = image.GetRasterXSize(), imageHeight = image.GetRasterYSize();
  std::vector<int> bands(bandCount);
  std::iota(bands.begin(), bands.end(), 1);
  // A pixel of nodata values, for the cells the GLT leaves empty.
  std::vector<unsigned char> empty(static_cast<size_t>(pixelBytes));
  for (int b = 0; b < bandCount; ++b) {
    double nodata = map.GetRasterBand(b + 1)->GetNoDataValue();
    GDALCopyWords(&nodata, GDT_Float64, 0, empty.data() + int64_t{b} * size, type, 0, 1);
  }
  const int64_t budget = std::max<int64_t>(ramBytes, 64ll << 20);
  int64_t stripRows =
      std::clamp<int64_t>(budget / 4 / std::max<int64_t>(1, glt.width * pixelBytes), 1, glt.height);
  std::vector<unsigned char> window, strip;
  const SilentFeedback silent;
  for (int64_t row0 = 0; row0 < glt.height;) {
    const int64_t rows = std::min(stripRows, glt.height - row0);
    const auto [first, last] = sourceRows(glt, row0, rows, imageWidth, imageHeight);
    const int64_t windowRows = last >= first ? last - first + 1 : 0;
    if (rows > 1 && windowRows * imageWidth * pixelBytes > budget / 2) {
      stripRows = rows / 2;  // a rotated swath: fewer map rows name fewer image rows
      continue;
    }
    window.resize(static_cast<size_t>(windowRows * imageWidth * pixelBytes));
    if (windowRows > 0) readStrip(image, bands, type, first, windowRows, window.data());
    strip.resize(static_cast<size_t>(rows * glt.width * pixelBytes));
    for (int64_t i = 0; i < rows * glt.width; ++i) {
      const int64_t cell = row0 * glt.width + i;
      const int64_t r = glt.row[cell] - 1, c = glt.column[cell] - 1;
      const bool inside = r >= 0 && r < imageHeight && c >= 0 && c < imageWidth;
      const unsigned char* from =
          inside ? window.data() + ((r - first) * imageWidth + c) * pixelBytes : empty.data();
      std::memcpy(strip.data() + i * pixelBytes, from, static_cast<size_t>(pixelBytes));
    }
    writeStrip(map, type, row0, rows, strip.data(), silent);
    row0 += rows;
  }
}

}  // namespace hyperstream
