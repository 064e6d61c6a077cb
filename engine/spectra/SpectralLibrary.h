#pragma once
// Tables of spectra, one rule wherever they are taken (SAM's LIBRARY, detection's TARGETS, the
// abundances' ENDMEMBERS), as analysts have them:
//  - the endmembers' CSV (spectra/EndmemberTable.h), with or without pixel positions, or its
//    point layer: a value per band column, each selected band's column found by the band's name
//    (its description, else its wavelength, else "band N"), else a "band N" column of its
//    number, else a column named by its wavelength; where the columns name no band, the columns
//    in order when there is one per selected band; a table that gives only some of the selected
//    bands is refused naming the parameter and the bands it lacks;
//  - a CSV of spectra by column: a wavelength column, then one column per spectrum;
//  - an ENVI spectral library (.sli with its .hdr: "spectra names", "wavelength", "fwhm");
//  - USGS splib07 ASCII spectra (a title line, then a value per line, -1.23e34 where a channel
//    was deleted): one file, or a folder of them, with the spectrometer's wavelength file given
//    apart, as the library ships them.
// Spectra on wavelengths are resampled to the image's bands by each band's Gaussian response (its
// centre and FWHM; the spacing of the centres where the image gives no FWHM) over ±3σ, integrated
// over each library channel's share of the wavelengths (from halfway to the channel before it to
// halfway to the one after): the library is taken as finer than the image, its own bandpass is
// not used. Where a channel lies at a band's centre (within 1 % of its FWHM) in a library no finer
// than the image there (spaced at least half the band's FWHM: a library convolved to the sensor),
// its value is taken as it is.

#include "io/Raster.h"
#include "spectra/Targets.h"

#include <string>
#include <vector>

namespace hyperstream {

struct LibraryFiles {
  // .csv, .sli (or its .hdr), a USGS .txt or a folder of them, or the endmembers' point layer
  // (.gpkg, .geojson, .shp)
  std::string library;
  std::string wavelengths;  // USGS: the wavelength file of the library's spectrometer
  std::string layer;        // a point layer's name in its file; empty: the first
};

struct SpectralLibrary {
  std::string format;  // for the log: "CSV", "ENVI spectral library", "USGS splib07 ASCII"
  std::vector<Target> spectra;
  // Per value of a spectrum, in nm (NaN in a spectrum: no value there). Empty for a CSV, whose
  // values are per band column (`columns`).
  std::vector<double> wavelengths;
  std::vector<std::string> columns;
  // Every file it was read from, each with the parameter that gave it: a run never writes one.
  std::vector<InputFile> files;
};

// Throws Error("LIBRARY") (or "LIBRARY_WAVELENGTHS") naming what is wrong.
SpectralLibrary readSpectralLibrary(const LibraryFiles& files);

// The library's spectra on the image's selected bands; throws Error(parameter) for a band the
// library does not cover, Error("INPUT") when the image has no wavelengths to resample to.
std::vector<Target> libraryOnBands(const SpectralLibrary& library, const RasterInfo& info,
                                   const std::vector<int>& bands,
                                   const std::string& parameter = "LIBRARY");

// The abundances' endmembers from any of the library formats; errors name ENDMEMBERS.
SpectralLibrary readEndmemberSpectra(const LibraryFiles& files);

// Detection's targets from any of the library formats: the endmembers' CSV as it is, the others
// as spectra on wavelengths; errors name TARGETS and TARGET_WAVELENGTHS.
DetectTargets readTargets(const LibraryFiles& files);
// The targets on the image's selected bands, as libraryOnBands takes them; throws
// Error("TARGETS").
std::vector<Target> targetsForImage(const DetectTargets& table, const RasterInfo& info,
                                    const std::vector<int>& bands);

// A library channel's share of a band's response.
struct ChannelWeight {
  int channel = 0;
  double weight = 0;
};
// The weights of the library's channels (centres `wavelengths`, nm, ascending) in a band of
// centre `centre` and width `fwhm` (nm), summing to 1 over the channels `present`; empty when
// the band is not covered: no present channel within ±3σ on one side of its centre, or less than
// half of its response on the present channels' shares.
std::vector<ChannelWeight> bandResponse(const std::vector<double>& wavelengths,
                                        const std::vector<bool>& present, double centre,
                                        double fwhm);

// Widths where a list gives none: the distance between each centre's neighbours, halved
// (Spectral Python's build_fwhm).
std::vector<double> widthsFromSpacing(const std::vector<double>& centres);

}  // namespace hyperstream
