#pragma once
// A sensor's product presented as a plain GDAL raster in image order (rows, columns, bands):
// bands drawn from the product's arrays (netCDF/HDF5 cubes through GDAL's multidimensional API,
// whatever their axis order) or from a classic raster, ordered by wavelength, scaled from DN to
// physical units, fill presented as nodata, with wavelengths, FWHM and bad bands as band metadata.
// The engine then reads a product as it reads any raster: openRaster() returns this view.

#include "io/Orthorectify.h"
#include "io/Raster.h"
#include "io/products/StoredArray.h"

#include <gdal_priv.h>

#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hyperstream {

// Where a product's bands come from: an array whose dimensions are rows, columns and bands in
// any order, or the bands of a classic raster.
struct CubeSource {
  std::shared_ptr<GDALMDArray> array;  // either this,
  size_t rowDim = 0, columnDim = 1, bandDim = 2;
  std::optional<StoredArray> stored;    // where the array is stored plainly, read the file's way
  std::shared_ptr<GDALDataset> raster;  // or this (its bands, 1-based, as the band index + 1)
  std::optional<double> fill;           // the raw value that marks no data
};

struct PresentedBand {
  int source = 0;     // index into ProductCube::sources
  int64_t index = 0;  // along the source's band dimension (0-based)
  // value = offset + raw * scale / divisor, as the products state it (PRISMA: min + DN (max -
  // min) / 65535), so that the view holds exactly the values their formulas give.
  double scale = 1, divisor = 1, offset = 0;
  double wavelength = std::nan(""), fwhm = std::nan("");  // nm
  bool good = true;
  std::string description;
};

struct ProductCube {
  std::string product;  // e.g. "EMIT L2A RFL", for the log
  std::string units;    // of the presented values, e.g. "reflectance"
  std::vector<std::string> files;
  int64_t width = 0, height = 0;
  std::vector<CubeSource> sources;
  std::vector<PresentedBand> bands;
  GDALDataType type = GDT_Float32;  // presented
  std::optional<double> nodata;     // presented for fill
  bool hasGeoTransform = false;
  std::array<double, 6> geoTransform{};
  std::string crsWkt;
  std::string geometryNote;  // said in the log, e.g. "image geometry (downtrack ...)"
  // The product's GLT, read when asked for (tens of megabytes); empty where it has none.
  std::function<std::shared_ptr<const Glt>()> readGlt;
};

struct Presentation;  // how a band's raw samples become what the view presents

// The GDAL dataset over a ProductCube. Reads go to the sources a run of bands at a time (one
// array read per run of consecutive bands of one source), at the caller's spacing.
class ProductDataset : public GDALDataset {
 public:
  explicit ProductDataset(ProductCube cube);
  const ProductCube& cube() const { return cube_; }
  char** GetFileList() override;
  // GDAL 3.12 asks a const dataset for a GDALGeoTransform instead of six doubles.
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 12, 0)
  CPLErr GetGeoTransform(GDALGeoTransform& transform) const override;
#else
  CPLErr GetGeoTransform(double* transform) override;
#endif
  const OGRSpatialReference* GetSpatialRef() const override;

 protected:
#ifdef BANDMAP_TYPE
  using BandMap = BANDMAP_TYPE;
#else
  using BandMap = int*;
#endif
  CPLErr IRasterIO(GDALRWFlag flag, int x0, int y0, int width, int height, void* data,
                   int bufferWidth, int bufferHeight, GDALDataType bufferType, int bandCount,
                   BandMap bandMap, GSpacing pixelSpace, GSpacing lineSpace, GSpacing bandSpace,
                   GDALRasterIOExtraArg* extra) override;

 private:
  friend class ProductBand;
  // The bands `bandMap[0 .. bandCount)` at the buffer's spacing, each source read once (an
  // array's bands in one read), scaled and fill made nodata. False
  // where this cannot be done (a spacing not of whole samples, scaling into an integer buffer):
  // GDAL's block-by-block reading does it then.
  bool readBands(const int* bandMap, int bandCount, int x0, int y0, int width, int height,
                 unsigned char* data, GDALDataType bufferType, GSpacing pixelSpace,
                 GSpacing lineSpace, GSpacing bandSpace);
  // Where and how a request's samples go.
  struct Request {
    int x0, y0, width, height;
    unsigned char* data;
    GDALDataType bufferType;
    GSpacing pixelSpace, lineSpace, bandSpace;
  };
  // The request's bands at `positions` (indices into bandMap) that come from one source; an
  // array presents them (and marks them presented), a raster's are presented after.
  bool readArray(const CubeSource& source, const int* bandMap, const std::vector<int>& positions,
                 const Request& request, std::vector<Presentation>& presented);
  bool readRaster(const CubeSource& source, const int* bandMap, const std::vector<int>& positions,
                  const Request& request);

  // Part of an array as `type`, dense in C order: the file's way when it is stored plainly in
  // that type, else GDAL's.
  bool readBlock(size_t source, const GUInt64 start[3], const size_t counts[3], GDALDataType type,
                 unsigned char* out);

  struct VsiClose {
    void operator()(VSILFILE* file) const { VSIFCloseL(file); }
  };
  ProductCube cube_;
  OGRSpatialReference crs_;
  std::vector<unsigned char> scratch_;  // an array's samples in its own order
  // Per source, the file its stored array is read from (opened at the first read).
  std::vector<std::unique_ptr<VSILFILE, VsiClose>> storedFiles_;
};

}  // namespace hyperstream
