// Fuzz target: an ENVI header beside 4 KiB of data, opened as a job's input is (GDAL's ENVI
// driver, then the engine's description, band selection by wavelength and bad-band list) and its
// first row read; and the same text as a header beside a file of another format is read
// (parseEnviHeader). Whatever the header says, the result is an Error naming a parameter or a
// readable input.

#include "core/Error.h"
#include "io/Raster.h"
#include "io/SpectralMetadata.h"

#include <cpl_vsi.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

void writeMemoryFile(const char* path, const void* data, size_t size) {
  VSILFILE* file = VSIFOpenL(path, "wb");
  if (!file) std::abort();
  VSIFWriteL(data, 1, size, file);
  VSIFCloseL(file);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hyperstream;
  static const std::vector<unsigned char> pixels = [] {
    std::vector<unsigned char> bytes(4096);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 37);
    return bytes;
  }();
  const auto fields =
      parseEnviHeader(QByteArray(reinterpret_cast<const char*>(data), static_cast<int>(size)));
  for (const auto& field : fields)
    if (field.first.find('\n') != std::string::npos) std::abort();  // keys end at their line
  writeMemoryFile("/vsimem/fuzz.hdr", data, size);
  writeMemoryFile("/vsimem/fuzz.img", pixels.data(), pixels.size());
  for (const BandExclusions& exclude : {BandExclusions{}, BandExclusions{{{1340, 1450}}, true}}) {
    try {
      JobInput input = openJobInput("/vsimem/fuzz.img", {}, exclude, {}, "fuzzing");
      // One row of the selected bands, when it is small (a header may claim any size).
      const int64_t rowBytes =
          input.info.width * static_cast<int64_t>(input.bands.size()) * typeSize(input.info.type);
      if (rowBytes > 0 && rowBytes <= (1 << 20)) {
        std::vector<unsigned char> row(static_cast<size_t>(rowBytes));
        readStrip(*input.dataset, input.bands, input.info.type, 0, 1, row.data());
      }
    } catch (const Error& error) {
      if (error.parameter().empty()) std::abort();
    }
  }
  VSIUnlink("/vsimem/fuzz.hdr");
  VSIUnlink("/vsimem/fuzz.img");
  return 0;
}
