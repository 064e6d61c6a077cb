// EMIT L1B RAD and L2A RFL (netCDF4): `radiance` or `reflectance` (downtrack, crosstrack, bands),
// the group `sensor_band_parameters` (wavelengths, fwhm, good_wavelengths: one per band), fill
// -9999 (the array's _FillValue; EMIT's own -9999 where a file lacks the attribute), and the
// GLT (`location/glt_x`, `glt_y`, 1-based, 0 = none) onto the north-up grid of the global
// `geotransform` and `spatial_ref`.

#include "core/Error.h"
#include "io/products/Products.h"

#include <QFileInfo>

#include <cmath>

namespace hyperstream {

namespace {

// The dimension of `array` named `name`, else `fallback` (the EMIT order).
size_t dimensionNamed(const GDALMDArray& array, const char* name, size_t fallback) {
  const auto& dimensions = array.GetDimensions();
  for (size_t d = 0; d < dimensions.size(); ++d)
    if (dimensions[d]->GetName() == name) return d;
  return fallback;
}

// EMIT's fill value (its products' documentation), for a file whose array lacks _FillValue.
constexpr double kEmitFill = -9999.0;

// A per-band array of sensor_band_parameters: one finite value per band (`required`: present).
void checkBandParameter(const std::string& file, const char* array,
                        const std::vector<double>& values, int64_t bands, bool required) {
  if (values.empty() && !required) return;
  if (static_cast<int64_t>(values.size()) != bands)
    throw Error("INPUT", "'" + file + "' (EMIT): sensor_band_parameters/" + array + " has " +
                             std::to_string(values.size()) + " values for " +
                             std::to_string(bands) + " bands");
  for (size_t b = 0; b < values.size(); ++b)
    if (!std::isfinite(values[b]) || (required && !(values[b] > 0)))
      throw Error("INPUT", "'" + file + "' (EMIT): sensor_band_parameters/" + array +
                               " is not a usable value for band " + std::to_string(b + 1));
}

std::shared_ptr<const Glt> readGlt(const std::string& file) {
  std::unique_ptr<GDALDataset> dataset = openMultidimensional(file, {"netCDF"});
  std::shared_ptr<GDALGroup> root = dataset ? dataset->GetRootGroup() : nullptr;
  std::shared_ptr<GDALGroup> location = root ? root->OpenGroup("location") : nullptr;
  if (!location) throw Error("ORTHORECTIFY", "'" + file + "' has no 'location' group (GLT)");
  auto x = location->OpenMDArray("glt_x");
  auto y = location->OpenMDArray("glt_y");
  const std::vector<double> transform = attributeNumbers(*root, "geotransform");
  if (!x || !y || x->GetDimensionCount() != 2 || y->GetDimensionCount() != 2 ||
      transform.size() != 6)
    throw Error("ORTHORECTIFY", "'" + file +
                                    "' has no GLT (location/glt_x, glt_y and the "
                                    "global 'geotransform')");
  auto glt = std::make_shared<Glt>();
  glt->height = static_cast<int64_t>(x->GetDimensions()[0]->GetSize());
  glt->width = static_cast<int64_t>(x->GetDimensions()[1]->GetSize());
  if (static_cast<int64_t>(y->GetDimensions()[0]->GetSize()) != glt->height ||
      static_cast<int64_t>(y->GetDimensions()[1]->GetSize()) != glt->width)
    throw Error("ORTHORECTIFY", "'" + file + "': glt_x and glt_y differ in size");
  const size_t cells = static_cast<size_t>(glt->width * glt->height);
  glt->column.resize(cells);
  glt->row.resize(cells);
  const GUInt64 start[2] = {0, 0};
  const size_t count[2] = {static_cast<size_t>(glt->height), static_cast<size_t>(glt->width)};
  const auto int32 = GDALExtendedDataType::Create(GDT_Int32);
  if (!x->Read(start, count, nullptr, nullptr, int32, glt->column.data()) ||
      !y->Read(start, count, nullptr, nullptr, int32, glt->row.data()))
    throw Error("ORTHORECTIFY", "cannot read the GLT of '" + file + "'");
  std::copy(transform.begin(), transform.end(), glt->geoTransform.begin());
  glt->crsWkt = attributeText(*root, "spatial_ref");
  return glt;
}

}  // namespace

std::optional<ProductCube> readEmit(const ProductName& name) {
  const QString suffix = QFileInfo(QString::fromStdString(name.file)).suffix().toLower();
  if (suffix != "nc" && suffix != "nc4") return std::nullopt;
  if (!name.component.empty() && name.component != "reflectance" && name.component != "radiance")
    return std::nullopt;
  std::unique_ptr<GDALDataset> dataset = openMultidimensional(name.file, {"netCDF"});
  std::shared_ptr<GDALGroup> root = dataset ? dataset->GetRootGroup() : nullptr;
  std::shared_ptr<GDALGroup> bandGroup = root ? root->OpenGroup("sensor_band_parameters") : nullptr;
  if (!bandGroup) return std::nullopt;
  std::shared_ptr<GDALMDArray> cube;
  std::string variable;
  for (const char* candidate : {"reflectance", "radiance"})
    if (name.component.empty() || name.component == candidate)
      if ((cube = root->OpenMDArray(candidate))) {
        variable = candidate;
        break;
      }
  if (!cube) return std::nullopt;
  if (cube->GetDimensionCount() != 3)
    throw Error("INPUT", "'" + name.given + "': EMIT's " + variable + " has " +
                             std::to_string(cube->GetDimensionCount()) + " dimensions, not 3");

  ProductCube product;
  product.product = variable == "reflectance" ? "EMIT L2A RFL" : "EMIT L1B RAD";
  product.units = variable == "reflectance" ? "reflectance" : cube->GetUnit();
  product.files = {name.file};
  CubeSource source;
  source.array = cube;
  source.rowDim = dimensionNamed(*cube, "downtrack", 0);
  source.columnDim = dimensionNamed(*cube, "crosstrack", 1);
  source.bandDim = dimensionNamed(*cube, "bands", 2);
  source.stored = storedArray(name.file, *cube);
  bool hasFill = false;
  const double fill = cube->GetNoDataValueAsDouble(&hasFill);
  source.fill = product.nodata = hasFill ? fill : kEmitFill;
  const auto& dimensions = cube->GetDimensions();
  product.height = static_cast<int64_t>(dimensions[source.rowDim]->GetSize());
  product.width = static_cast<int64_t>(dimensions[source.columnDim]->GetSize());
  const auto bandCount = static_cast<int64_t>(dimensions[source.bandDim]->GetSize());
  product.type = cube->GetDataType().GetNumericDataType();
  product.sources.push_back(source);

  const std::vector<double> wavelengths = arrayNumbers(bandGroup->OpenMDArray("wavelengths"));
  const std::vector<double> fwhm = arrayNumbers(bandGroup->OpenMDArray("fwhm"));
  const std::vector<double> good = arrayNumbers(bandGroup->OpenMDArray("good_wavelengths"));
  checkBandParameter(name.given, "wavelengths", wavelengths, bandCount, true);
  checkBandParameter(name.given, "fwhm", fwhm, bandCount, false);
  checkBandParameter(name.given, "good_wavelengths", good, bandCount, false);
  for (int64_t b = 0; b < bandCount; ++b) {
    PresentedBand band;
    band.index = b;
    const auto at = static_cast<size_t>(b);
    if (at < wavelengths.size()) band.wavelength = wavelengths[at];
    if (at < fwhm.size()) band.fwhm = fwhm[at];
    if (at < good.size()) band.good = good[at] != 0;
    band.description = "band " + std::to_string(b + 1);
    product.bands.push_back(band);
  }
  product.geometryNote =
      "EMIT's image geometry (downtrack x crosstrack, no map grid); ORTHORECTIFY puts the "
      "outputs on the GLT's map grid";
  const std::string file = name.file;
  if (root->OpenGroup("location")) product.readGlt = [file] { return readGlt(file); };
  return product;
}

}  // namespace hyperstream
