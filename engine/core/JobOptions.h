#pragma once
// What every job's options share: the input and its bands, the main output, the memory budget and
// the device. Each job's options add their own (PcaOptions, SppOptions).

#include "core/Device.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hyperstream {

// Bands asked for, 1-based: single bands and ranges. They stay ranges until the raster's band
// count is known, so that "1-2000000000" is refused before anything is expanded.
struct BandRange {
  BandRange(int band) : first(band), last(band) {}  // NOLINT: lets {2, 5, 8} list single bands
  BandRange(int firstBand, int lastBand) : first(firstBand), last(lastBand) {}
  int first, last;
};
using BandList = std::vector<BandRange>;
// "1-100,120": band numbers and ranges; throws Error(parameter) for anything else.
BandList parseBandList(const std::string& text, const std::string& parameter);

// Bands left out by what the file says of them, after the bands asked for: wavelength ranges (in
// nanometres, inclusive; e.g. the water-vapour windows 1340-1450,1790-1960) and the file's
// bad-band list (ENVI's bbl).
struct BandExclusions {
  std::vector<std::pair<double, double>> nanometres;
  bool badBandList = false;
};
// "1340-1450,1790-1960"; throws Error("EXCLUDE_NM").
std::vector<std::pair<double, double>> parseNanometreRanges(const std::string& text);

// Output data types. The integer types other than Byte hold rebuilt images (denoise, inverse);
// SameAsInput is resolved by the job to the type the rebuilt image had.
enum class OutputType { Float32, Float64, Byte, UInt16, Int16, UInt32, Int32, SameAsInput };
std::string outputTypeName(OutputType type);  // GDAL's name; "Input" for SameAsInput

constexpr int64_t kDefaultRamBytes = int64_t{1} << 30;

struct JobOptions {
  std::string input;
  std::string output;
  BandList bands;  // 1-based bands and ranges; empty: every band
  BandExclusions exclude;
  std::optional<double> nodata;  // the input's nodata as the user declares it, over the file's
  OutputType outputType = OutputType::Float32;
  std::string format;  // GDAL driver short name; empty: from the output's extension
  std::vector<std::string> creationOptions;  // NAME=VALUE
  int64_t ramBytes = kDefaultRamBytes;
  DeviceChoice device;    // auto, the CPU, one GPU or several
  int64_t stripRows = 0;  // 0: from the RAM budget (tests force small strips)
  // Raster outputs on the input's GLT map grid (EMIT) rather than in its image geometry.
  bool orthorectify = false;
};

}  // namespace hyperstream
