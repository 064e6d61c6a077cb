#include "ProductFixtures.h"

#include <gdal_priv.h>
#include <hdf5.h>
#include <ogr_spatialref.h>

#include <QDir>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <numeric>
#include <stdexcept>

namespace testing {

namespace {

constexpr double kFill = -9999.0;

void check(bool done, const std::string& what) {
  if (!done) throw std::runtime_error("cannot write " + what);
}

double asFloat(double value) {
  return static_cast<float>(value);
}

// Reflectance about 0.3 with the correlations of correlatedCube.
Cube reflectanceScene(int64_t rows, int64_t cols, int bands, uint64_t seed) {
  Cube cube = correlatedCube(rows, cols, bands, seed, 3000.0, 300.0);
  for (double& v : cube.values) v *= 1e-4;
  return cube;
}

// A few pixels that are fill in every band: the first row's first five and one inside.
std::vector<int64_t> fillPixels(int64_t rows, int64_t cols) {
  std::vector<int64_t> pixels{0, 1, 2, 3, 4, (rows / 2) * cols + cols / 3};
  return pixels;
}

Cube emptyLike(int64_t rows, int64_t cols, int bands) {
  Cube cube;
  cube.rows = rows;
  cube.cols = cols;
  cube.bands = bands;
  cube.values.assign(static_cast<size_t>(rows * cols * bands), kFill);
  cube.nodata.assign(bands, kFill);
  return cube;
}

// --- EMIT ---------------------------------------------------------------------------------

template <typename T>
void writeArray(const std::shared_ptr<GDALGroup>& group, const std::string& name,
                const std::vector<std::shared_ptr<GDALDimension>>& dimensions, GDALDataType type,
                const std::vector<T>& values, GDALDataType valueType) {
  auto array = group->CreateMDArray(name, dimensions, GDALExtendedDataType::Create(type));
  check(bool(array), name);
  std::vector<GUInt64> start(dimensions.size(), 0);
  std::vector<size_t> count(dimensions.size());
  for (size_t d = 0; d < dimensions.size(); ++d)
    count[d] = static_cast<size_t>(dimensions[d]->GetSize());
  check(array->Write(start.data(), count.data(), nullptr, nullptr,
                     GDALExtendedDataType::Create(valueType), values.data()),
        name);
}

}  // namespace

EmitGlt emitGlt(int64_t rows, int64_t cols) {
  const double angle = 30.0 * M_PI / 180.0, cosine = std::cos(angle), sine = std::sin(angle);
  EmitGlt glt;
  glt.width = static_cast<int64_t>(std::ceil(cols * cosine + rows * sine));
  glt.height = static_cast<int64_t>(std::ceil(cols * sine + rows * cosine));
  glt.row.assign(static_cast<size_t>(glt.width * glt.height), 0);
  glt.column = glt.row;
  for (int64_t i = 0; i < glt.height; ++i)
    for (int64_t j = 0; j < glt.width; ++j) {
      const double dx = j + 0.5 - glt.width / 2.0, dy = i + 0.5 - glt.height / 2.0;
      const double c = cosine * dx + sine * dy + cols / 2.0;
      const double r = -sine * dx + cosine * dy + rows / 2.0;
      if (r < 0 || r >= rows || c < 0 || c >= cols) continue;
      glt.row[i * glt.width + j] = static_cast<int>(r) + 1;
      glt.column[i * glt.width + j] = static_cast<int>(c) + 1;
    }
  const double transform[6] = {-118.0, 0.0005, 0.0, 34.0, 0.0, -0.0005};
  std::copy(transform, transform + 6, glt.geoTransform);
  return glt;
}

Product writeEmit(const std::string& path, int64_t rows, int64_t cols, uint64_t seed,
                  FillAttribute fill) {
  constexpr int bands = 285;
  const Cube scene = reflectanceScene(rows, cols, bands, seed);
  Product product;
  product.path = path;
  Cube& expected = product.expected = emptyLike(rows, cols, bands);
  std::vector<float> wavelengths(bands), fwhm(bands, 8.5f);
  std::vector<uint8_t> good(bands);
  for (int b = 0; b < bands; ++b) {
    wavelengths[b] = static_cast<float>(381.0 + 7.43 * b);
    const double w = wavelengths[b];
    good[b] = !((w >= 1320 && w <= 1440) || (w >= 1770 && w <= 1965));
    product.wavelengths.push_back(w);
  }
  for (int64_t p = 0; p < scene.pixels(); ++p)
    for (int b = 0; b < bands; ++b)
      expected.values[p * bands + b] = asFloat(good[b] ? scene.values[p * bands + b] : -0.01);
  for (int64_t p : fillPixels(rows, cols))
    std::fill_n(expected.values.begin() + p * bands, bands, kFill);
  std::vector<float> samples(expected.values.begin(), expected.values.end());

  GDALAllRegister();
  GDALDriver* driver = GetGDALDriverManager()->GetDriverByName("netCDF");
  check(driver != nullptr, path + " (GDAL has no netCDF driver)");
  std::unique_ptr<GDALDataset> file(driver->CreateMultiDimensional(path.c_str(), nullptr, nullptr));
  check(bool(file), path);
  auto root = file->GetRootGroup();
  auto downtrack = root->CreateDimension("downtrack", "", "", rows);
  auto crosstrack = root->CreateDimension("crosstrack", "", "", cols);
  auto bandDim = root->CreateDimension("bands", "", "", bands);
  {
    auto reflectance = root->CreateMDArray("reflectance", {downtrack, crosstrack, bandDim},
                                           GDALExtendedDataType::Create(GDT_Float32));
    check(bool(reflectance), "reflectance");
    if (fill == FillAttribute::Declared) check(reflectance->SetNoDataValue(kFill), "_FillValue");
    const GUInt64 start[3] = {0, 0, 0};
    const size_t count[3] = {static_cast<size_t>(rows), static_cast<size_t>(cols), bands};
    check(reflectance->Write(start, count, nullptr, nullptr,
                             GDALExtendedDataType::Create(GDT_Float32), samples.data()),
          "reflectance");
  }
  auto parameters = root->CreateGroup("sensor_band_parameters");
  check(bool(parameters), "sensor_band_parameters");
  writeArray(parameters, "wavelengths", {bandDim}, GDT_Float32, wavelengths, GDT_Float32);
  writeArray(parameters, "fwhm", {bandDim}, GDT_Float32, fwhm, GDT_Float32);
  writeArray(parameters, "good_wavelengths", {bandDim}, GDT_Byte, good, GDT_Byte);
  const EmitGlt glt = emitGlt(rows, cols);
  auto location = root->CreateGroup("location");
  check(bool(location), "location");
  auto orthoY = location->CreateDimension("ortho_y", "", "", glt.height);
  auto orthoX = location->CreateDimension("ortho_x", "", "", glt.width);
  writeArray(location, "glt_x", {orthoY, orthoX}, GDT_Int32, glt.column, GDT_Int32);
  writeArray(location, "glt_y", {orthoY, orthoX}, GDT_Int32, glt.row, GDT_Int32);
  auto transform =
      root->CreateAttribute("geotransform", {6}, GDALExtendedDataType::Create(GDT_Float64));
  check(transform && transform->Write(glt.geoTransform, 6), "geotransform");
  OGRSpatialReference wgs84;
  wgs84.importFromEPSG(4326);
  char* wkt = nullptr;
  wgs84.exportToWkt(&wkt);
  auto reference = root->CreateAttribute("spatial_ref", {}, GDALExtendedDataType::CreateString());
  check(reference && reference->Write(wkt), "spatial_ref");
  CPLFree(wkt);
  auto title = root->CreateAttribute("title", {}, GDALExtendedDataType::CreateString());
  check(title && title->Write("EMIT L2A Surface Reflectance 60 m V001"), "title");
  return product;
}

// --- PRISMA -------------------------------------------------------------------------------

namespace {

struct Hdf5 {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Hdf5() {
    if (id >= 0) close(id);
  }
};

void attribute(hid_t owner, const char* name, hid_t fileType, hid_t memoryType, const void* values,
               hsize_t count) {
  const Hdf5 space{count == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &count, nullptr),
                   H5Sclose};
  const Hdf5 attr{H5Acreate2(owner, name, fileType, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  check(attr.id >= 0 && H5Awrite(attr.id, memoryType, values) >= 0, name);
}

void floatAttribute(hid_t owner, const char* name, const std::vector<float>& values) {
  attribute(owner, name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, values.data(), values.size());
}

void scalarFloat(hid_t owner, const char* name, float value) {
  attribute(owner, name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, &value, 0);
}

void scalarDouble(hid_t owner, const char* name, double value) {
  attribute(owner, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, 0);
}

struct PrismaPart {
  const char* name;  // VNIR, SWIR
  std::vector<float> wavelengths;
  float low, high;       // L2: L2Scale*Min/Max
  float factor, offset;  // L1: ScaleFactor_*, Offset_*
};

}  // namespace

Product writePrisma(const std::string& path, int64_t rows, int64_t cols, uint64_t seed,
                    PrismaLevel level, Storage storage) {
  const bool l1 = level == PrismaLevel::L1;
  PrismaPart parts[2] = {{"VNIR", {}, 0.0f, 0.875f, 100.0f, 0.5f},
                         {"SWIR", {}, 0.015625f, 0.6875f, 200.0f, 0.25f}};
  // DN from a scene value (reflectance about 0.3; radiance 100 times that), and the product's
  // formula back: L2 min + DN (max - min) / 65535, L1 DN / factor - offset.
  const auto toDn = [&](double value, const PrismaPart& p) {
    return l1 ? std::round((value * 100 + p.offset) * p.factor)
              : std::round((value - p.low) / (p.high - p.low) * 65535.0);
  };
  const auto fromDn = [&](double dn, const PrismaPart& p) {
    return l1 ? dn / double{p.factor} - double{p.offset}
              : double{p.low} + dn * (double{p.high} - double{p.low}) / 65535.0;
  };
  for (int i = 0; i < 66; ++i) parts[0].wavelengths.push_back(i < 63 ? 1000.0f - 9.5f * i : 0.0f);
  for (int i = 0; i < 173; ++i)
    parts[1].wavelengths.push_back(i < 171 ? 2497.0f - 9.25f * i : 0.0f);
  const Cube scene = reflectanceScene(rows, cols, 66 + 173, seed);
  const std::vector<int64_t> fill = fillPixels(rows, cols);
  // DN per part, rows x bands x columns as the file holds them.
  std::vector<std::vector<uint16_t>> dn(2);
  struct Band {
    double wavelength;
    int part, index;
  };
  std::vector<Band> presented;
  int sceneBand = 0;
  for (int part = 0; part < 2; ++part) {
    const PrismaPart& p = parts[part];
    const auto bands = static_cast<int64_t>(p.wavelengths.size());
    dn[part].assign(static_cast<size_t>(rows * bands * cols), 0);
    for (int64_t b = 0; b < bands; ++b, ++sceneBand) {
      if (p.wavelengths[b] == 0) continue;  // padding: DN 0
      presented.push_back({p.wavelengths[b], part, static_cast<int>(b)});
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          const double value = scene.at(r, c, sceneBand);
          const double scaled = toDn(value, p);
          dn[part][(r * bands + b) * cols + c] =
              static_cast<uint16_t>(std::clamp(scaled, 1.0, 65535.0));
        }
    }
    for (int64_t pixel : fill)
      for (int64_t b = 0; b < bands; ++b)
        dn[part][((pixel / cols) * bands + b) * cols + pixel % cols] = 0;
  }
  std::stable_sort(presented.begin(), presented.end(),
                   [](const Band& a, const Band& b) { return a.wavelength < b.wavelength; });
  Product product;
  product.path = path;
  Cube& expected = product.expected = emptyLike(rows, cols, static_cast<int>(presented.size()));
  for (size_t i = 0; i < presented.size(); ++i) {
    const Band& band = presented[i];
    const PrismaPart& p = parts[band.part];
    const auto bands = static_cast<int64_t>(p.wavelengths.size());
    product.wavelengths.push_back(band.wavelength);
    product.parts.emplace_back(p.name);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const uint16_t value = dn[band.part][(r * bands + band.index) * cols + c];
        expected.at(r, c, static_cast<int>(i)) = value == 0 ? kFill : asFloat(fromDn(value, p));
      }
  }

  const char* swathName = l1 ? "PRS_L1_HCO" : "PRS_L2D_HCO";
  const Hdf5 file{H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose};
  check(file.id >= 0, path);
  const Hdf5 hdfeos{H5Gcreate2(file.id, "/HDFEOS", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                    H5Gclose};
  const Hdf5 swaths{H5Gcreate2(file.id, "/HDFEOS/SWATHS", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                    H5Gclose};
  const Hdf5 swath{H5Gcreate2(file.id, (std::string("/HDFEOS/SWATHS/") + swathName).c_str(),
                              H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                   H5Gclose};
  const Hdf5 fields{
      H5Gcreate2(file.id, (std::string("/HDFEOS/SWATHS/") + swathName + "/Data Fields").c_str(),
                 H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Gclose};
  check(fields.id >= 0, "Data Fields");
  for (int part = 0; part < 2; ++part) {
    const PrismaPart& p = parts[part];
    const hsize_t dims[3] = {static_cast<hsize_t>(rows), p.wavelengths.size(),
                             static_cast<hsize_t>(cols)};
    const Hdf5 space{H5Screate_simple(3, dims, nullptr), H5Sclose};
    const std::string name = std::string(p.name) + "_Cube";
    const Hdf5 creation{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
    if (storage == Storage::CompressedChunks) {
      const hsize_t chunk[3] = {std::min<hsize_t>(dims[0], 7), dims[1], dims[2]};
      check(H5Pset_chunk(creation.id, 3, chunk) >= 0 && H5Pset_deflate(creation.id, 4) >= 0,
            "chunks of " + name);
    }
    const Hdf5 data{H5Dcreate2(fields.id, name.c_str(), H5T_STD_U16LE, space.id, H5P_DEFAULT,
                               creation.id, H5P_DEFAULT),
                    H5Dclose};
    check(data.id >= 0 && H5Dwrite(data.id, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                   dn[part].data()) >= 0,
          name);
    const std::string suffix = part == 0 ? "Vnir" : "Swir";
    floatAttribute(file.id, ("List_Cw_" + suffix).c_str(), p.wavelengths);
    floatAttribute(file.id, ("List_Fwhm_" + suffix).c_str(),
                   std::vector<float>(p.wavelengths.size(), 10.0f));
    if (l1) {
      scalarFloat(file.id, ("ScaleFactor_" + suffix).c_str(), p.factor);
      scalarFloat(file.id, ("Offset_" + suffix).c_str(), p.offset);
    } else {
      scalarFloat(file.id, ("L2Scale" + suffix + "Min").c_str(), p.low);
      scalarFloat(file.id, ("L2Scale" + suffix + "Max").c_str(), p.high);
    }
  }
  if (l1) return product;  // in the swath's geometry: no map grid
  const int epsg = 32633;
  attribute(file.id, "Epsg_Code", H5T_STD_I32LE, H5T_NATIVE_INT, &epsg, 0);
  scalarDouble(file.id, "Product_ULcorner_easting", 500000.0);
  scalarDouble(file.id, "Product_ULcorner_northing", 4500000.0);
  scalarDouble(file.id, "Product_LRcorner_easting", 500000.0 + 30.0 * cols);
  scalarDouble(file.id, "Product_LRcorner_northing", 4500000.0 - 30.0 * rows);
  return product;
}

Product bandsOf(const Product& product, const std::string& part) {
  Product subset = product;
  std::vector<int> kept;
  subset.wavelengths.clear();
  subset.parts.clear();
  for (size_t b = 0; b < product.parts.size(); ++b)
    if (product.parts[b] == part) {
      kept.push_back(static_cast<int>(b));
      subset.wavelengths.push_back(product.wavelengths[b]);
      subset.parts.push_back(part);
    }
  const Cube& all = product.expected;
  Cube& cube = subset.expected = emptyLike(all.rows, all.cols, static_cast<int>(kept.size()));
  for (int64_t p = 0; p < all.pixels(); ++p)
    for (size_t i = 0; i < kept.size(); ++i)
      cube.values[p * cube.bands + i] = all.values[p * all.bands + kept[i]];
  return subset;
}

void setRootAttribute(const std::string& path, const std::string& name, float value) {
  const Hdf5 file{H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose};
  check(file.id >= 0, path);
  if (H5Aexists(file.id, name.c_str()) > 0) check(H5Adelete(file.id, name.c_str()) >= 0, name);
  scalarFloat(file.id, name.c_str(), value);
}

// --- EnMAP and DESIS -----------------------------------------------------------------------

namespace {

struct XmlBand {
  double wavelength, fwhm, gain, offset;
};

// The GeoTIFF of Int16 DN for `bands` (value = DN gain + offset), fill -32768 in the fill pixels
// and in `emptyBands`; the expected cube from the same formula.
Product writeDnImage(const std::string& image, const std::vector<XmlBand>& bands,
                     const std::vector<int>& emptyBands, bool nodataTag, int64_t rows, int64_t cols,
                     uint64_t seed) {
  const int count = static_cast<int>(bands.size());
  const Cube scene = reflectanceScene(rows, cols, count, seed);
  Cube dn = emptyLike(rows, cols, count);
  Product product;
  product.path = image;
  Cube& expected = product.expected = emptyLike(rows, cols, count);
  const std::vector<int64_t> fill = fillPixels(rows, cols);
  for (int64_t p = 0; p < scene.pixels(); ++p)
    for (int b = 0; b < count; ++b) {
      const bool empty = std::find(emptyBands.begin(), emptyBands.end(), b) != emptyBands.end() ||
                         std::find(fill.begin(), fill.end(), p) != fill.end();
      const double value =
          empty ? -32768.0
                : std::round((scene.values[p * count + b] - bands[b].offset) / bands[b].gain);
      dn.values[p * count + b] = value;
      expected.values[p * count + b] =
          empty ? kFill : asFloat(value * bands[b].gain + bands[b].offset);
    }
  dn.nodata.assign(count, nodataTag ? -32768.0 : std::nan(""));
  writeCube(dn, image, GDT_Int16, "GTiff", {"INTERLEAVE=BAND"});
  for (const XmlBand& band : bands) product.wavelengths.push_back(band.wavelength);
  return product;
}

std::string number(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.10g", value);
  return text;
}

}  // namespace

Product writeEnmap(const std::string& folder, int64_t rows, int64_t cols, uint64_t seed) {
  const std::string stem =
      folder + "/ENMAP01-____L2A-DT0000025905_20230707T192008Z_001_V010303_20230922T131734Z";
  std::vector<XmlBand> bands(224);
  for (int b = 0; b < 224; ++b) bands[b] = {418.0 + 9.36 * b, 8.0, 1e-4, 0.0};
  Product product =
      writeDnImage(stem + "-SPECTRAL_IMAGE.TIF", bands, {130, 131}, true, rows, cols, seed);
  std::ofstream xml(stem + "-METADATA.XML");
  xml << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<level_X>\n  <metadata><schema>"
         "<processingLevel>L2A</processingLevel></schema></metadata>\n  <specific>\n"
         "    <bandCharacterisation>\n";
  for (size_t b = 0; b < bands.size(); ++b)
    xml << "      <bandID number=\"" << b + 1 << "\"><wavelengthCenterOfBand>"
        << number(bands[b].wavelength) << "</wavelengthCenterOfBand><FWHMOfBand>"
        << number(bands[b].fwhm) << "</FWHMOfBand><GainOfBand>" << number(bands[b].gain)
        << "</GainOfBand><OffsetOfBand>" << number(bands[b].offset) << "</OffsetOfBand></bandID>\n";
  xml << "    </bandCharacterisation>\n  </specific>\n</level_X>\n";
  check(bool(xml), stem + "-METADATA.XML");
  return product;
}

Product writeDesis(const std::string& folder, int64_t rows, int64_t cols, uint64_t seed) {
  const std::string stem = folder + "/DESIS-HSI-L2A-DT0483531728_001-20200830T013530-V0215";
  std::vector<XmlBand> bands(235);
  for (int b = 0; b < 235; ++b) bands[b] = {401.275 + 2.553 * b, 2.55, 1e-4, 0.0};
  Product product = writeDnImage(stem + "-SPECTRAL_IMAGE.tif", bands, {}, false, rows, cols, seed);
  std::ofstream xml(stem + "-METADATA.xml");
  xml << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<hsi_doc>\n  <specific>\n"
         "    <noDataValue>-32768</noDataValue>\n    <bandCharacterisation>\n";
  for (size_t b = 0; b < bands.size(); ++b)
    xml << "      <band><bandNumber>" << b + 1 << "</bandNumber><wavelengthCenterOfBand>"
        << number(bands[b].wavelength) << "</wavelengthCenterOfBand><wavelengthWidthOfBand>"
        << number(bands[b].fwhm) << "</wavelengthWidthOfBand><gainOfBand>" << number(bands[b].gain)
        << "</gainOfBand><offsetOfBand>" << number(bands[b].offset) << "</offsetOfBand></band>\n";
  xml << "    </bandCharacterisation>\n  </specific>\n</hsi_doc>\n";
  check(bool(xml), stem + "-METADATA.xml");
  return product;
}

}  // namespace testing
