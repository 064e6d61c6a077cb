// PRISMA L1 and L2B/L2C/L2D (HDF5-EOS .he5): /HDFEOS/SWATHS/PRS_<level>_HCO/Data Fields/
// VNIR_Cube and SWIR_Cube, rows x bands x columns (BIL), UInt16 DN. Root attributes give the
// wavelengths (List_Cw_Vnir, List_Cw_Swir, descending, 0 for padding bands), FWHM, band flags,
// the scaling (L2: L2ScaleVnirMin/Max, value = min + DN (max - min) / 65535; L1: ScaleFactor_Vnir
// and Offset_Vnir, value = DN / factor - offset) and, for L2D, the map grid (Epsg_Code and the
// product's corners). DN 0 is fill. Both cubes are presented as one, ordered by wavelength: the
// bands of the VNIR/SWIR overlap (about 920-1010 nm) are all kept, each named by its cube, and
// --exclude-nm leaves out either side. The zero-wavelength padding bands are not presented.

#include "core/Error.h"
#include "io/products/Products.h"

#include <ogr_spatialref.h>

#include <QFileInfo>

#include <algorithm>
#include <cmath>

namespace hyperstream {

namespace {

struct PrismaCube {
  const char* name;    // VNIR or SWIR
  const char* suffix;  // of the root attributes: Vnir or Swir
};
constexpr PrismaCube kCubes[] = {{"VNIR", "Vnir"}, {"SWIR", "Swir"}};

// The swath of the hyperspectral cubes: PRS_L2D_HCO, PRS_L1_HCO, ...
std::shared_ptr<GDALGroup> cubeSwath(const GDALGroup& root) {
  const auto hdfeos = root.OpenGroup("HDFEOS");
  const auto swaths = hdfeos ? hdfeos->OpenGroup("SWATHS") : nullptr;
  if (!swaths) return nullptr;
  for (const std::string& swath : swaths->GetGroupNames())
    if (swath.rfind("PRS_", 0) == 0 && swath.size() > 4 &&
        swath.compare(swath.size() - 4, 4, "_HCO") == 0)
      return swaths->OpenGroup(swath);
  return nullptr;
}

struct Scaling {
  double scale, divisor, offset;
};

// value = offset + DN * scale / divisor, from the root attributes of the product's level.
Scaling scaling(const GDALGroup& root, const std::string& suffix, bool level1,
                const std::string& file) {
  auto one = [&](const std::string& attribute) {
    const std::vector<double> values = attributeNumbers(root, attribute);
    if (values.size() != 1)
      throw Error("INPUT", "'" + file + "' (PRISMA) has no attribute " + attribute);
    return values[0];
  };
  if (level1) {
    const double factor = one("ScaleFactor_" + suffix);
    if (!(factor > 0) || !std::isfinite(factor))
      throw Error("INPUT", "'" + file + "' (PRISMA): ScaleFactor_" + suffix + " is " +
                               std::to_string(factor) + ", not a positive scale");
    const double offset = one("Offset_" + suffix);
    if (!std::isfinite(offset))
      throw Error("INPUT", "'" + file + "' (PRISMA): Offset_" + suffix + " is not a number");
    return {1, factor, -offset};
  }
  const double low = one("L2Scale" + suffix + "Min"), high = one("L2Scale" + suffix + "Max");
  if (!std::isfinite(low) || !std::isfinite(high) || !(high > low))
    throw Error("INPUT", "'" + file + "' (PRISMA): L2Scale" + suffix + "Min and L2Scale" + suffix +
                             "Max (" + std::to_string(low) + ", " + std::to_string(high) +
                             ") are no range of values");
  return {high - low, 65535.0, low};
}

// The map grid of an L2D product, when its attributes give one; an Epsg_Code or corners that
// are there but unusable are an error.
void setMapGrid(const GDALGroup& root, ProductCube& product, const std::string& file) {
  const std::vector<double> epsg = attributeNumbers(root, "Epsg_Code");
  const std::vector<double> ulx = attributeNumbers(root, "Product_ULcorner_easting");
  const std::vector<double> uly = attributeNumbers(root, "Product_ULcorner_northing");
  const std::vector<double> lrx = attributeNumbers(root, "Product_LRcorner_easting");
  const std::vector<double> lry = attributeNumbers(root, "Product_LRcorner_northing");
  if (epsg.size() != 1 || ulx.size() != 1 || uly.size() != 1 || lrx.size() != 1 || lry.size() != 1)
    return;
  OGRSpatialReference crs;
  char* wkt = nullptr;
  {
    QuietGdalErrors quiet;
    if (!(std::abs(epsg[0]) < 1e9) ||
        crs.importFromEPSG(static_cast<int>(epsg[0])) != OGRERR_NONE ||
        crs.exportToWkt(&wkt) != OGRERR_NONE) {
      CPLFree(wkt);
      throw Error("INPUT", "'" + file + "' (PRISMA): Epsg_Code " + std::to_string(epsg[0]) +
                               " names no coordinate system");
    }
  }
  product.crsWkt = wkt;
  CPLFree(wkt);
  // The corners are the outer corners of the corner pixels.
  const double width = (lrx[0] - ulx[0]) / static_cast<double>(product.width);
  const double height = (lry[0] - uly[0]) / static_cast<double>(product.height);
  if (!std::isfinite(ulx[0]) || !std::isfinite(uly[0]) || !std::isfinite(width) ||
      !std::isfinite(height) || width == 0 || height == 0)
    throw Error("INPUT", "'" + file +
                             "' (PRISMA): Product_ULcorner_* and Product_LRcorner_* give no map "
                             "grid (the same or no corners)");
  product.hasGeoTransform = true;
  product.geoTransform = {ulx[0], width, 0, uly[0], 0, height};
}

}  // namespace

std::optional<ProductCube> readPrisma(const ProductName& name) {
  const QString suffix = QFileInfo(QString::fromStdString(name.file)).suffix().toLower();
  if (suffix != "he5" && suffix != "h5") return std::nullopt;
  // A subdataset name picks one cube: ...//HDFEOS/SWATHS/PRS_L2D_HCO/Data_Fields/VNIR_Cube.
  std::string only;
  if (!name.component.empty()) {
    for (const PrismaCube& cube : kCubes) {
      const std::string array = std::string(cube.name) + "_Cube";
      if (name.component.size() >= array.size() &&
          name.component.compare(name.component.size() - array.size(), array.size(), array) == 0)
        only = cube.name;
    }
    if (only.empty()) return std::nullopt;
  }
  std::unique_ptr<GDALDataset> dataset = openMultidimensional(name.file, {"HDF5"});
  std::shared_ptr<GDALGroup> root = dataset ? dataset->GetRootGroup() : nullptr;
  std::shared_ptr<GDALGroup> swath = root ? cubeSwath(*root) : nullptr;
  std::shared_ptr<GDALGroup> fields = swath ? swath->OpenGroup("Data Fields") : nullptr;
  if (!fields) return std::nullopt;
  const std::string swathName = swath->GetName();  // PRS_L2D_HCO
  const std::string level = swathName.substr(4, swathName.size() - 8);
  const bool level1 = level == "L1";

  ProductCube product;
  product.product = "PRISMA " + level;
  product.units = level1 ? "radiance" : "reflectance";
  product.files = {name.file};
  product.type = GDT_Float32;
  product.nodata = -9999.0;
  for (const PrismaCube& cube : kCubes) {
    if (!only.empty() && only != cube.name) continue;
    std::shared_ptr<GDALMDArray> array = fields->OpenMDArray(std::string(cube.name) + "_Cube");
    if (!array) continue;
    if (array->GetDimensionCount() != 3)
      throw Error("INPUT", "'" + name.given + "': PRISMA's " + cube.name + "_Cube is not 3-D");
    const auto& dimensions = array->GetDimensions();
    const auto rows = static_cast<int64_t>(dimensions[0]->GetSize());
    const auto columns = static_cast<int64_t>(dimensions[2]->GetSize());
    if (product.sources.empty()) {
      product.height = rows;
      product.width = columns;
    } else if (rows != product.height || columns != product.width) {
      throw Error("INPUT", "'" + name.given + "': PRISMA's VNIR and SWIR cubes differ in size");
    }
    CubeSource source;
    source.array = array;
    source.rowDim = 0;
    source.bandDim = 1;
    source.columnDim = 2;
    source.fill = 0.0;
    source.stored = storedArray(name.file, *array);
    const Scaling scaled = scaling(*root, cube.suffix, level1, name.given);
    const std::vector<double> centres =
        attributeNumbers(*root, std::string("List_Cw_") + cube.suffix);
    const std::vector<double> widths =
        attributeNumbers(*root, std::string("List_Fwhm_") + cube.suffix);
    const std::vector<double> flags =
        attributeNumbers(*root, std::string("List_Cw_") + cube.suffix + "_Flags");
    const auto bands = static_cast<int64_t>(dimensions[1]->GetSize());
    if (static_cast<int64_t>(centres.size()) != bands)
      throw Error("INPUT", "'" + name.given + "': List_Cw_" + cube.suffix + " has " +
                               std::to_string(centres.size()) + " wavelengths for " +
                               std::to_string(bands) + " bands");
    for (int64_t b = 0; b < bands; ++b) {
      const auto at = static_cast<size_t>(b);
      if (!std::isfinite(centres[at]))
        throw Error("INPUT", "'" + name.given + "': List_Cw_" + cube.suffix +
                                 " is not a number for band " + std::to_string(b + 1));
      if (centres[at] <= 0) continue;  // padding
      PresentedBand band;
      band.source = static_cast<int>(product.sources.size());
      band.index = b;
      band.scale = scaled.scale;
      band.divisor = scaled.divisor;
      band.offset = scaled.offset;
      band.wavelength = centres[at];
      if (at < widths.size()) band.fwhm = widths[at];
      if (at < flags.size()) band.good = flags[at] != 0;
      band.description = std::string(cube.name) + " " + std::to_string(b + 1);
      product.bands.push_back(band);
    }
    product.sources.push_back(source);
  }
  if (product.sources.empty()) return std::nullopt;
  std::stable_sort(
      product.bands.begin(), product.bands.end(),
      [](const PresentedBand& a, const PresentedBand& b) { return a.wavelength < b.wavelength; });
  if (level == "L2D") setMapGrid(*root, product, name.given);
  product.geometryNote = product.hasGeoTransform ? "" : "PRISMA's image geometry (no map grid)";
  return product;
}

}  // namespace hyperstream
