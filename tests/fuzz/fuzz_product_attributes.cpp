// Fuzz target: the attributes of EMIT's netCDF and PRISMA's HDF5-EOS products. The bytes give
// the values a small product is written with (EMIT: the band parameters, _FillValue, the GLT and
// its geotransform; PRISMA: the wavelengths, widths, flags, scaling and map corners, level 1 or
// 2D), each byte a value near a plausible one, a nasty one (0, -1, NaN, ±inf, 1e38, -9999) or the
// raw bits of the next four; the file is then opened as a job's input is, its first row read and
// its GLT taken. Whatever the values, the result is an Error naming a parameter or a readable
// input.

#include "core/Error.h"
#include "io/Raster.h"
#include "io/products/Products.h"

#include <gdal_priv.h>
#include <hdf5.h>

#include <QCoreApplication>
#include <QDir>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using namespace hyperstream;

// The fuzzer's bytes as values; zeros once they are used up.
class Values {
 public:
  Values(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  // A value near `typical` (steps of `step`), a nasty one, or raw float32 bits.
  float near(float typical, float step) {
    const uint8_t b = byte();
    if (b < 160) return typical + static_cast<float>(b - 80) * step;
    if (b < 200) {
      const float nasty[] = {0.0f,
                             -1.0f,
                             std::nanf(""),
                             std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity(),
                             1e38f,
                             -9999.0f,
                             1e-38f};
      return nasty[(b - 160) % 8];
    }
    uint32_t bits = 0;
    for (int i = 0; i < 4; ++i) bits = bits << 8 | byte();
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
  }
  std::vector<float> list(size_t count, float first, float spacing, float step) {
    std::vector<float> values(count);
    for (size_t i = 0; i < count; ++i)
      values[i] = near(first + spacing * static_cast<float>(i), step);
    return values;
  }

 private:
  const uint8_t* data_;
  size_t size_, at_ = 0;
};

QString folder() {
  static const QString path = [] {
    const QString made =
        QDir::tempPath() +
        QString("/hyperstream-fuzz-products-%1").arg(QCoreApplication::applicationPid());
    QDir().mkpath(made);
    return made;
  }();
  return path;
}

template <typename T>
void writeArray(GDALGroup& group, const std::string& name,
                const std::vector<std::shared_ptr<GDALDimension>>& dimensions, GDALDataType type,
                const std::vector<T>& values, GDALDataType valueType) {
  auto array = group.CreateMDArray(name, dimensions, GDALExtendedDataType::Create(type));
  if (!array) std::abort();
  std::vector<GUInt64> start(dimensions.size(), 0);
  std::vector<size_t> count(dimensions.size());
  for (size_t d = 0; d < dimensions.size(); ++d) count[d] = dimensions[d]->GetSize();
  array->Write(start.data(), count.data(), nullptr, nullptr,
               GDALExtendedDataType::Create(valueType), values.data());
}

std::string writeEmit(Values& values) {
  std::string path = (folder() + "/emit.nc").toStdString();
  GDALDriver* driver = GetGDALDriverManager()->GetDriverByName("netCDF");
  if (!driver) return "";
  std::unique_ptr<GDALDataset> file(driver->CreateMultiDimensional(path.c_str(), nullptr, nullptr));
  if (!file) std::abort();
  auto root = file->GetRootGroup();
  const int rows = 3, cols = 4, bands = 1 + values.byte() % 5;
  auto down = root->CreateDimension("downtrack", "", "", rows);
  auto cross = root->CreateDimension("crosstrack", "", "", cols);
  auto bandDim = root->CreateDimension("bands", "", "", bands);
  {
    auto cube = root->CreateMDArray("reflectance", {down, cross, bandDim},
                                    GDALExtendedDataType::Create(GDT_Float32));
    if (values.byte() % 2) cube->SetNoDataValue(static_cast<double>(values.near(-9999, 1)));
    const std::vector<float> samples =
        values.list(static_cast<size_t>(rows) * cols * bands, 0.3f, 0.0f, 0.01f);
    const GUInt64 start[3] = {0, 0, 0};
    const size_t count[3] = {rows, cols, static_cast<size_t>(bands)};
    cube->Write(start, count, nullptr, nullptr, GDALExtendedDataType::Create(GDT_Float32),
                samples.data());
  }
  auto parameters = root->CreateGroup("sensor_band_parameters");
  for (const auto& [name, first, spacing] : {std::tuple{"wavelengths", 400.0f, 300.0f},
                                             {"fwhm", 8.5f, 0.0f},
                                             {"good_wavelengths", 1.0f, 0.0f}}) {
    const uint8_t length = values.byte() % 8;  // 0: none; else bands + (length - 4)
    if (length == 0) continue;
    const int n = std::max(1, bands + length - 4);
    auto dimension = parameters->CreateDimension(std::string(name) + "_n", "", "", n);
    writeArray(*parameters, name, {dimension}, GDT_Float32, values.list(n, first, spacing, 1.0f),
               GDT_Float32);
  }
  if (values.byte() % 2) {
    auto location = root->CreateGroup("location");
    const int gridRows = 1 + values.byte() % 4, gridCols = 1 + values.byte() % 4;
    auto y = location->CreateDimension("ortho_y", "", "", gridRows);
    auto x = location->CreateDimension("ortho_x", "", "", gridCols);
    for (const char* name : {"glt_x", "glt_y"}) {
      std::vector<int32_t> cells(static_cast<size_t>(gridRows) * gridCols);
      for (int32_t& cell : cells) cell = static_cast<int32_t>(values.byte()) - 78;  // -78 to 177
      writeArray(*location, name, {y, x}, GDT_Int32, cells, GDT_Int32);
    }
    const int entries = values.byte() % 2 ? 6 : 1 + values.byte() % 8;
    const std::vector<float> transform = values.list(entries, 0.001f, 0.0f, 0.0005f);
    std::vector<double> asDouble(transform.begin(), transform.end());
    auto attribute = root->CreateAttribute("geotransform", {static_cast<GUInt64>(entries)},
                                           GDALExtendedDataType::Create(GDT_Float64));
    attribute->Write(asDouble.data(), asDouble.size());
  }
  return path;
}

struct Hdf5 {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Hdf5() {
    if (id >= 0) close(id);
  }
};

void floatAttribute(hid_t owner, const std::string& name, const std::vector<float>& values) {
  const hsize_t count = values.size();
  const Hdf5 space{
      values.size() == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &count, nullptr), H5Sclose};
  const Hdf5 attribute{
      H5Acreate2(owner, name.c_str(), H5T_IEEE_F32LE, space.id, H5P_DEFAULT, H5P_DEFAULT),
      H5Aclose};
  if (attribute.id < 0 || H5Awrite(attribute.id, H5T_NATIVE_FLOAT, values.data()) < 0) std::abort();
}

std::string writePrisma(Values& values) {
  std::string path = (folder() + "/prisma.he5").toStdString();
  const bool level1 = values.byte() % 2;
  const Hdf5 file{H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose};
  const std::string swath =
      std::string("/HDFEOS/SWATHS/") + (level1 ? "PRS_L1_HCO" : "PRS_L2D_HCO");
  const Hdf5 links{H5Pcreate(H5P_LINK_CREATE), H5Pclose};
  H5Pset_create_intermediate_group(links.id, 1);
  const Hdf5 fields{
      H5Gcreate2(file.id, (swath + "/Data Fields").c_str(), links.id, H5P_DEFAULT, H5P_DEFAULT),
      H5Gclose};
  const hsize_t rows = 3, cols = 4;
  for (const char* part : {"Vnir", "Swir"}) {
    const hsize_t bands = 1 + values.byte() % 4;
    const hsize_t sizes[3] = {rows, bands, cols};
    const Hdf5 space{H5Screate_simple(3, sizes, nullptr), H5Sclose};
    const std::string name = std::string(part[0] == 'V' ? "VNIR" : "SWIR") + "_Cube";
    const Hdf5 cube{H5Dcreate2(fields.id, name.c_str(), H5T_STD_U16LE, space.id, H5P_DEFAULT,
                               H5P_DEFAULT, H5P_DEFAULT),
                    H5Dclose};
    std::vector<uint16_t> dn(rows * bands * cols);
    for (uint16_t& v : dn) v = static_cast<uint16_t>(values.byte() * 200);
    H5Dwrite(cube.id, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, dn.data());
    const size_t listed = std::max<size_t>(1, bands + values.byte() % 3 - 1);
    const std::string suffix(part);
    floatAttribute(file.id, "List_Cw_" + suffix,
                   values.list(listed, part[0] == 'V' ? 1000.0f : 2400.0f, -10.0f, 2.0f));
    floatAttribute(file.id, "List_Fwhm_" + suffix, values.list(listed, 10.0f, 0.0f, 1.0f));
    floatAttribute(file.id, "List_Cw_" + suffix + "_Flags", values.list(listed, 1.0f, 0.0f, 1.0f));
    if (level1) {
      floatAttribute(file.id, "ScaleFactor_" + suffix, {values.near(100, 10)});
      floatAttribute(file.id, "Offset_" + suffix, {values.near(0, 0.5f)});
    } else {
      floatAttribute(file.id, "L2Scale" + suffix + "Min", {values.near(0, 0.01f)});
      floatAttribute(file.id, "L2Scale" + suffix + "Max", {values.near(0.8f, 0.01f)});
    }
  }
  if (!level1 && values.byte() % 2) {
    floatAttribute(file.id, "Epsg_Code", {values.near(32633, 1)});
    for (const auto& [name, typical] : {std::pair{"Product_ULcorner_easting", 500000.0f},
                                        {"Product_ULcorner_northing", 4.6e6f},
                                        {"Product_LRcorner_easting", 500120.0f},
                                        {"Product_LRcorner_northing", 4.59991e6f}})
      floatAttribute(file.id, name, {values.near(typical, 30)});
  }
  return path;
}

void open(const std::string& path) {
  try {
    JobInput input = openJobInput(path, {}, {}, {}, "fuzzing");
    const int64_t rowBytes =
        input.info.width * static_cast<int64_t>(input.bands.size()) * typeSize(input.info.type);
    if (rowBytes > 0 && rowBytes <= (1 << 20)) {
      std::vector<unsigned char> row(static_cast<size_t>(rowBytes));
      readStrip(*input.dataset, input.bands, input.info.type, 0, 1, row.data());
    }
  } catch (const Error& error) {
    if (error.parameter().empty()) std::abort();
  }
  try {
    const std::unique_ptr<ProductDataset> product = openProduct(path);
    if (product && product->cube().readGlt) product->cube().readGlt();
  } catch (const Error& error) {
    if (error.parameter().empty()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool ready = [] {
    ensureGdalDrivers();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)ready;
  if (size == 0) return 0;
  Values values(data + 1, size - 1);
  const std::string path = data[0] % 2 ? writePrisma(values) : writeEmit(values);
  if (!path.empty()) open(path);
  return 0;
}
