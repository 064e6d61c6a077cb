#pragma once
// A transform saved by a PCA or MNF run (its statistics JSON, --stats / OUTPUT_STATS), read back
// to apply it to another image: the model, the bands it was fitted on and its Byte ranges.

#include "io/SpectralMetadata.h"
#include "projection/PcaModel.h"
#include "stats/NoiseDirection.h"

#include <QByteArray>

#include <optional>
#include <string>
#include <vector>

namespace hyperstream {

struct SavedTransform {
  PcaModel model;
  std::vector<int> bands;               // 1-based band numbers of the image it was fitted on
  int components = 0;                   // written by the fitting run
  std::optional<NoiseDirection> noise;  // MNF
  bool hadOutputNodata = false;         // the fitting run's output declared a nodata value
  // The image it was fitted on: its data type (GDAL's name; empty from older runs), the bands'
  // descriptions and nodata values (NaN: none).
  std::string inputType;
  std::vector<std::string> bandDescriptions;
  std::vector<double> nodata;
  BandSpectra spectra;  // their wavelengths, FWHM and bad-band flags where the image had them
  // The fitting run's Byte rescale, when it wrote Byte: per component of those it wrote.
  bool hasByteRanges = false;
  double byteLow = 0;
  std::vector<double> byteMinimum, byteMaximum;
};

// Reads the statistics JSON at `path` and validates it before any work: types, counts against the
// bands, finite values within what the fitted image's type holds, orthonormal vectors (within
// 1e-6) and the transform that wrote them. Throws Error("STATS") naming the field.
SavedTransform readSavedTransform(const std::string& path);
// The same from the file's contents (`path` only names it in errors).
SavedTransform parseSavedTransform(const QByteArray& text, const std::string& path);

}  // namespace hyperstream
