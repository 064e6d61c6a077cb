#pragma once
// Outputs put on a map grid through a GLT (geometry lookup table), as EMIT's own tools do: each
// cell of the north-up grid takes the value of the image pixel its GLT entry names (nearest
// neighbour), nodata where it names none.

#include <gdal_priv.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hyperstream {

// For each cell of the map grid (row-major), the 1-based image row and column it takes its value
// from (0: none), and the grid's georeferencing.
struct Glt {
  int64_t width = 0, height = 0;
  std::vector<int32_t> row, column;
  std::array<double, 6> geoTransform{};
  std::string crsWkt;
};

// What a job's outputs are put on, and the memory the resampling may use.
struct Orthorectification {
  std::shared_ptr<const Glt> glt;
  int64_t ramBytes = 0;
};

// Writes every band of `image` onto the grid of `map` (created glt.width x glt.height with
// image's band count and type), strip by strip, each strip reading the image rows its cells name
// (at most about `ramBytes` of them at a time). Cells the GLT leaves empty, or whose source is
// outside the image, get each band's nodata value, which must be set on `map`. Throws Error.
void orthorectify(GDALDataset& image, const Glt& glt, GDALDataset& map, int64_t ramBytes);

// The nodata value a map band of `type` gets where the image's band has none: a value the
// outputs never hold in practice (-9999 for floating-point types, the type's largest otherwise).
double mapNodata(GDALDataType type);

}  // namespace hyperstream
