#pragma once
// Spectra as the algorithms take them: a named spectrum on the image's selected bands, and a
// table's targets before they are put on the bands.

#include "io/InputFile.h"

#include <string>
#include <vector>

namespace hyperstream {

struct Target {
  std::string name;
  std::vector<double> spectrum;  // per selected band, in the image's units
};

// Targets as a table gives them (spectra/SpectralLibrary.h): a value per column, each column
// matched to a band by its name, or on wavelengths to be resampled.
struct DetectTargets {
  std::vector<std::string> columns;
  std::vector<Target> targets;
  // Where the targets come as spectra on wavelengths (a spectral library: SpectralLibrary.h), in
  // nm per value: they are resampled to the image's bands (targetsForImage) and `columns` is empty.
  std::vector<double> wavelengths;
  // Every file they were read from (a library's header, a folder's spectra, the wavelength file):
  // a run that takes them never writes one.
  std::vector<InputFile> files;
};

}  // namespace hyperstream
