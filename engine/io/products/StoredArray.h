#pragma once
// A product's array read as its file stores it, where it stores it plainly: an HDF5 dataset
// (netCDF-4 variables are ones) that is contiguous, unfiltered and in this machine's byte order
// lies in the file as one C-order block of samples. Such an array is read with ordinary file
// reads, by many threads at once, where GDAL's reads of HDF5 and netCDF wait on one lock of the
// library, one thread after another.
// Arrays stored otherwise (chunked, compressed) are read through GDAL.

#include <gdal_priv.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace hyperstream {

struct StoredArray {
  std::string file;
  uint64_t offset = 0;  // of the first sample, from the start of the file
  GDALDataType type = GDT_Unknown;
  std::array<uint64_t, 3> sizes{};  // C order, as GDAL's dimensions
};

// Where `array` (3-D, of `file`) lies when it is stored plainly; nothing otherwise, or when a
// read of its middle row the file's way differs from GDAL's.
std::optional<StoredArray> storedArray(const std::string& file, const GDALMDArray& array);

// The block start .. start + counts of `array` into `out` (C order, dense), from `file` (opened
// on array.file). False, having reported nothing, when the file is shorter than it says.
bool readStored(VSILFILE* file, const StoredArray& array, const uint64_t start[3],
                const size_t counts[3], unsigned char* out);

}  // namespace hyperstream
