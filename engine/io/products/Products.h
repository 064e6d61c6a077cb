#pragma once
// Sensors' products as analysts download them, each recognised by one small reader and opened
// as a ProductDataset in image order, in physical units, with wavelengths and fill as nodata:
//   EMIT L1B RAD and L2A RFL (netCDF4)                   Emit.cpp
//   PRISMA L1 and L2B/L2C/L2D (HDF5-EOS .he5)            Prisma.cpp
//   EnMAP L1B/L1C/L2A and DESIS L1B/L1C/L2A (GeoTIFF + XML)  XmlDescribed.cpp
// AVIRIS-NG and AVIRIS-3 (ENVI with wavelength, fwhm, bbl and data ignore value) need no reader:
// GDAL's ENVI driver and SpectralMetadata read them.

#include "io/products/ProductCube.h"

#include <memory>
#include <optional>
#include <string>

namespace hyperstream {

// What a reader is given: the name the user gave, the file it names and, for a subdataset name
// such as NETCDF:"f.nc":reflectance, the part after the file ("reflectance"; empty otherwise).
struct ProductName {
  std::string given;
  std::string file;
  std::string component;
};

// The product `name` is, opened; nullptr when no reader knows it. Throws Error("INPUT") for a
// product a reader knows but cannot read (a missing metadata file, an array of the wrong shape).
std::unique_ptr<ProductDataset> openProduct(const std::string& name);

// Whether a reader knows `name` (even one it cannot read: its error then comes with the run's).
bool isProduct(const std::string& name);

// The readers: each returns nullopt for what is not its product.
std::optional<ProductCube> readEmit(const ProductName& name);
std::optional<ProductCube> readPrisma(const ProductName& name);
std::optional<ProductCube> readXmlDescribed(const ProductName& name);

// Helpers the readers share.
// A multidimensional dataset opened with one of `drivers`, or nullptr.
std::unique_ptr<GDALDataset> openMultidimensional(const std::string& file,
                                                  std::initializer_list<const char*> drivers);
// An attribute's values as numbers (empty when absent), or its text.
std::vector<double> attributeNumbers(const GDALIHasAttribute& owner, const std::string& name);
std::string attributeText(const GDALIHasAttribute& owner, const std::string& name);
// A whole one-dimensional array as numbers (empty when absent or not 1-D).
std::vector<double> arrayNumbers(const std::shared_ptr<GDALMDArray>& array);

}  // namespace hyperstream
