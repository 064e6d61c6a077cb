#pragma once
// The embedded demo scene: a synthetic hyperspectral cube built like a real one, from a few
// endmember spectra mixed by spatially smooth abundance maps, with sensor noise, dead bands and a
// nodata border.

#include "core/Feedback.h"

#include <gdal.h>

#include <cstdint>
#include <string>
#include <vector>

namespace hyperstream {

struct SynthOptions {
  std::string output;
  int64_t rows = 512;
  int64_t cols = 512;
  int bands = 224;                // spread evenly over 400-2500 nm, like AVIRIS
  GDALDataType type = GDT_Int16;  // Int16, UInt16 or Float32 (scaled reflectance x 10000)
  uint64_t seed = 1;
  int endmembers = 5;
  int deadBands = -1;       // constant bands; -1: about one per 56 bands
  int border = -1;          // nodata border width in pixels; -1: 1/64 of the smaller side
  double noise = 20.0;      // sensor noise standard deviation, in DN
  double snrDb = 0;         // > 0: the noise instead set to this SNR over the scene (mean power)
  double shading = 0.1;     // brightness varies smoothly by up to this fraction (topography)
  int purePatch = 0;        // > 0: a square of this side where each endmember lies pure
  bool writeTruth = false;  // also write <stem>_abundances.tif and <stem>_endmembers.csv
  std::string format;       // GDAL driver; empty: from the extension
};

struct SynthResult {
  std::vector<double> wavelengthsNm;
  std::vector<int> deadBands;  // 1-based
  double nodata = 0;
  double noise = 0;  // the noise's standard deviation, in DN
  std::string abundancesPath, endmembersPath;
};

// Endmember reflectance spectra (0-1) at the given wavelengths: vegetation, soil, water,
// clay mineral, asphalt, then random smooth spectra. endmembers x wavelengths, row-major.
std::vector<double> endmemberSpectra(int endmembers, const std::vector<double>& wavelengthsNm,
                                     uint64_t seed);

SynthResult synthesizeScene(const SynthOptions& options, Feedback& feedback);

}  // namespace hyperstream
