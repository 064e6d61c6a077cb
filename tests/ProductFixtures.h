#pragma once
// Sensors' products written as their specifications lay them out (small, with the real band
// counts and metadata), and for each the cube its reader must present, computed here from the
// specification's own formulas: the plain GeoTIFF a product must read as.

#include "TestSupport.h"

#include <string>
#include <vector>

namespace testing {

// A product file (and any files beside it) and the cube it must read as: image order, values in
// physical units rounded to Float32, fill as -9999 (EMIT's own fill).
struct Product {
  std::string path;                 // what the user gives
  Cube expected;                    // presented cube; nodata -9999 in every band
  std::vector<double> wavelengths;  // of the presented bands, nm
  std::vector<std::string> parts;   // of the presented bands: PRISMA's VNIR or SWIR, else empty
};

// The product's bands of one part (PRISMA's "VNIR" or "SWIR"), as its subdataset reads.
Product bandsOf(const Product& product, const std::string& part);

// EMIT L2A RFL: reflectance(downtrack, crosstrack, bands) Float32 with 285 bands, fill -9999 in
// a few pixels, bad bands (good_wavelengths 0) at -0.01, and a GLT rotating the swath by 30°.
// With FillAttribute::Absent the reflectance has no _FillValue (some reprocessed files).
enum class FillAttribute { Declared, Absent };
Product writeEmit(const std::string& path, int64_t rows, int64_t cols, uint64_t seed,
                  FillAttribute fill = FillAttribute::Declared);
// PRISMA L2D: VNIR_Cube (66 bands) and SWIR_Cube (173), rows x bands x columns, UInt16 DN,
// wavelengths descending with padding zeros, L2Scale*Min/Max, DN 0 fill, UTM corners. L1: the
// same cubes of radiance, ScaleFactor_* and Offset_*, no map grid. The cubes are stored
// contiguous (read the file's way) or in compressed chunks (read through GDAL's HDF5 driver).
enum class PrismaLevel { L1, L2D };
enum class Storage { Contiguous, CompressedChunks };
Product writePrisma(const std::string& path, int64_t rows, int64_t cols, uint64_t seed,
                    PrismaLevel level = PrismaLevel::L2D, Storage storage = Storage::Contiguous);
// A root attribute of an HDF5 file (PRISMA's) replaced by one float32 value, for tests of
// products whose metadata are there but unusable.
void setRootAttribute(const std::string& path, const std::string& name, float value);
// EnMAP L2A: SPECTRAL_IMAGE.TIF (224 bands, Int16, nodata -32768, two bands fill everywhere)
// and METADATA.XML (bandCharacterisation/bandID: wavelength, FWHM, gain 1e-4, offset 0).
Product writeEnmap(const std::string& folder, int64_t rows, int64_t cols, uint64_t seed);
// DESIS L2A: SPECTRAL_IMAGE.tif (235 bands, Int16, no nodata tag) and METADATA.xml (band/
// bandNumber, wavelengthCenterOfBand, wavelengthWidthOfBand, gainOfBand, offsetOfBand,
// noDataValue).
Product writeDesis(const std::string& folder, int64_t rows, int64_t cols, uint64_t seed);

// The GLT writeEmit writes, for checking orthorectified outputs: per map cell (row-major) the
// 1-based image row and column, 0 for none; and the map grid's size and geotransform.
struct EmitGlt {
  int64_t width = 0, height = 0;
  std::vector<int> row, column;
  double geoTransform[6];
};
EmitGlt emitGlt(int64_t rows, int64_t cols);

}  // namespace testing
