#pragma once
// What spectra/SpectralLibrary.cpp and spectra/LibraryReaders.cpp (the USGS and ENVI formats)
// share: the bounds on a library's files and the readers of those formats.

#include "spectra/SpectralLibrary.h"

#include <QByteArray>
#include <QString>

#include <cstdint>
#include <string>

namespace hyperstream::libraries {

// Libraries are tables of spectra; a file beyond these is not one (or is crafted to exhaust
// memory).
constexpr qint64 kLargestFile = qint64{256} << 20;
constexpr int64_t kMostValues = int64_t{32} << 20;
constexpr int kMostChannels = 100000;
// USGS splib07 marks deleted channels with -1.23e34.
constexpr double kDeletedBelow = -1e30;

inline QString text(const std::string& s) {
  return QString::fromStdString(s);
}

// Opened without blocking (a FIFO would block forever) and checked to be a regular file, at
// most kLargestFile bytes; Error(parameter) otherwise.
QByteArray readSmallFile(const QString& path, const std::string& parameter);

// USGS splib07 ASCII spectra (files.library: a file or a folder of them; files.wavelengths: the
// spectrometer's wavelength file). Throws Error("LIBRARY") or Error("LIBRARY_WAVELENGTHS").
SpectralLibrary readUsgs(const LibraryFiles& files);
// An ENVI spectral library (.sli and its .hdr). Throws Error("LIBRARY").
SpectralLibrary readEnvi(const std::string& path);

}  // namespace hyperstream::libraries
