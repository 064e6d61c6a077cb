#pragma once
// Wavelengths, band widths and bad bands wherever tools put them, in nanometres:
//  - each band's metadata: "wavelength" with "wavelength_units" (the ENVI driver, many writers),
//    or GDAL's IMAGERY domain, CENTRAL_WAVELENGTH_UM and FWHM_UM (GDAL 3.10 and later);
//  - the dataset's ENVI domain lists, "wavelength", "fwhm" and "bbl" (ENVI files, and VRTs as the
//    EnMAP-Box writes them);
//  - an ENVI header beside a file of another format (scene.hdr or scene.tif.hdr beside
//    scene.tif), which GDAL's GeoTIFF driver does not read.
// The first source that gives every band a wavelength wins; units default to micrometres for
// values below 100, nanometres otherwise.

#include <gdal_priv.h>

#include <QByteArray>

#include <string>
#include <vector>

namespace hyperstream {

struct SpectralMetadata {
  std::vector<double> wavelengths;  // nm, per band; NaN where unknown
  std::vector<double> fwhm;         // nm, per band; NaN where unknown
  std::vector<bool> good;           // per band; empty when no bad-band list was found
  std::string goodProblem;          // why a bad-band list that was found is not used
  std::string source;               // where the wavelengths came from (for the log); empty: none
  // Without a source: why a list that was found is not used (an entry that is no wavelength, a
  // list of another length), for the log and errors.
  std::string wavelengthProblem;
};

SpectralMetadata readSpectralMetadata(GDALDataset& dataset, const std::string& path);

// The spectral metadata of an output whose bands are input bands (SPP, denoise, inverse), per
// output band: NaN where unknown, `good` empty where the input has no bad-band list.
struct BandSpectra {
  std::vector<double> wavelengths, fwhm;  // nm
  std::vector<bool> good;
  bool empty() const;
};
// Of the 1-based `bands` of an input with these per-band lists (RasterInfo's).
BandSpectra bandSpectraOf(const std::vector<double>& wavelengths, const std::vector<double>& fwhm,
                          const std::vector<bool>& good, const std::vector<int>& bands);

// Writes them where GDAL and the readers above find them again: each band's "wavelength",
// "wavelength_units" (Nanometers), "fwhm" and "bbl" items and its IMAGERY domain's
// CENTRAL_WAVELENGTH_UM and FWHM_UM (GDAL 3.10 and later read those); for an ENVI file also the
// dataset's ENVI lists, which GDAL writes into the header ("wavelength = {...}", "fwhm", "bbl",
// "wavelength units").
void writeSpectralMetadata(GDALDataset& dataset, const BandSpectra& spectra);

// The fields of an ENVI header ("key = value", values in braces across lines), keys lower-case.
// Lists stay as their text between the braces.
std::vector<std::pair<std::string, std::string>> parseEnviHeader(const QByteArray& text);

// A wavelength in nanometres: `units` "Nanometers", "Micrometers", "um", "µm", ... or empty (then
// values below 100 can only be micrometres).
double toNanometres(double wavelength, const std::string& units);

}  // namespace hyperstream
