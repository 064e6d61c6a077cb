// Fuzz target: a sensor's XML metadata (EnMAP's or DESIS's METADATA.XML) beside a small GeoTIFF
// of DN, opened as a job's input is (the product reader, then the engine's description and band
// selection by wavelength) under both sensors' names and its first row read. Whatever the XML
// says, the result is an Error naming a parameter or a readable input.

#include "core/Error.h"
#include "io/Raster.h"

#include <cpl_vsi.h>
#include <gdal_priv.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr int kBands = 3;

void writeMemoryFile(const std::string& path, const void* data, size_t size) {
  VSILFILE* file = VSIFOpenL(path.c_str(), "wb");
  if (!file) std::abort();
  VSIFWriteL(data, 1, size, file);
  VSIFCloseL(file);
}

// A 5 x 4 Int16 GeoTIFF of kBands bands at `path`, nodata -32768 in one pixel.
void writeImage(const std::string& path) {
  GDALDriver* driver = GetGDALDriverManager()->GetDriverByName("GTiff");
  std::unique_ptr<GDALDataset> image(
      driver->Create(path.c_str(), 5, 4, kBands, GDT_Int16, nullptr));
  if (!image) std::abort();
  std::vector<int16_t> values(20);
  for (int b = 1; b <= kBands; ++b) {
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<int16_t>(i == 7 ? -32768 : 1000 + 37 * b + 11 * i);
    GDALRasterBand* band = image->GetRasterBand(b);
    band->SetNoDataValue(-32768);
    if (band->RasterIO(GF_Write, 0, 0, 5, 4, values.data(), 5, 4, GDT_Int16, 0, 0) != CE_None)
      std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hyperstream;
  static const bool ready = [] {
    ensureGdalDrivers();
    return true;
  }();
  (void)ready;
  const std::string stems[] = {
      "/vsimem/fuzz/ENMAP01-____L2A-DT0000025905_20230707T192008Z_001_V010303_20230922T131734Z-",
      "/vsimem/fuzz/DESIS-HSI-L2A-DT0483531728_001-20200830T013530-V0215-"};
  for (const std::string& stem : stems) {
    const std::string image = stem + "SPECTRAL_IMAGE.TIF", metadata = stem + "METADATA.XML";
    writeImage(image);
    writeMemoryFile(metadata, data, size);
    for (const std::string& given : {image, metadata})
      for (const BandExclusions& exclude :
           {BandExclusions{}, BandExclusions{{{1340, 1450}}, true}}) {
        try {
          JobInput input = openJobInput(given, {}, exclude, {}, "fuzzing");
          const int64_t rowBytes = input.info.width * static_cast<int64_t>(input.bands.size()) *
                                   typeSize(input.info.type);
          if (rowBytes > 0 && rowBytes <= (1 << 20)) {
            std::vector<unsigned char> row(static_cast<size_t>(rowBytes));
            readStrip(*input.dataset, input.bands, input.info.type, 0, 1, row.data());
          }
        } catch (const Error& error) {
          if (error.parameter().empty()) std::abort();
        }
      }
    VSIUnlink(image.c_str());
    VSIUnlink(metadata.c_str());
  }
  return 0;
}
