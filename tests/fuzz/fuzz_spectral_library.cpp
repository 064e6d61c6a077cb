// Fuzz target: a table of spectra in each of the library formats (a CSV by row or by column, an
// ENVI .sli with its header, a USGS splib07 ASCII spectrum with its wavelength file, a folder of
// USGS spectra), read as SAM, detection and the abundances read them and put on the bands of an
// image with wavelengths and of one without. The first byte picks the format; the rest is the
// file, or its files between lines "@@NEXT@@" (.sli: header, then data; USGS: spectrum, then the
// wavelengths; folder: the spectra). Whatever the bytes, the result is an Error naming a parameter
// or spectra with one value per selected band.

#include "core/Error.h"
#include "spectra/SpectralLibrary.h"

#include <QByteArray>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QList>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using namespace hyperstream;

// The files of one input, below a folder of this process.
QString folder() {
  static const QString path = [] {
    const QString made =
        QDir::tempPath() +
        QString("/hyperstream-fuzz-library-%1").arg(QCoreApplication::applicationPid());
    QDir().mkpath(made);
    return made;
  }();
  return path;
}

void writeFile(const QString& path, const QByteArray& bytes) {
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size()) std::abort();
}

// Six bands, with the wavelengths and widths of a VNIR-SWIR sensor, or none (NaN).
RasterInfo imageOf(bool withWavelengths) {
  RasterInfo info;
  info.path = "fuzz.tif";
  info.width = info.height = 4;
  info.bandCount = 6;
  info.type = GDT_Float32;
  const double centres[] = {450, 550, 650, 850, 1650, 2200};
  for (int b = 0; b < info.bandCount; ++b) {
    info.wavelengths.push_back(withWavelengths ? centres[b] : std::nan(""));
    info.fwhm.push_back(withWavelengths ? 10.0 : std::nan(""));
    info.bandDescriptions.emplace_back();
  }
  info.wavelengthUnits = withWavelengths ? "nm" : "";
  return info;
}

void checkOnBands(const std::vector<Target>& spectra, size_t bands) {
  for (const Target& spectrum : spectra)
    if (spectrum.spectrum.size() != bands) std::abort();
}

// Reads `files` every way a run does and puts the spectra on both images' bands.
void readEveryWay(const LibraryFiles& files) {
  const std::vector<std::vector<int>> selections{{1, 2, 3, 4, 5, 6}, {2, 4, 6}};
  const auto onImages = [&](auto&& put) {
    for (const bool withWavelengths : {true, false})
      for (const std::vector<int>& bands : selections) {
        try {
          checkOnBands(put(imageOf(withWavelengths), bands), bands.size());
        } catch (const Error& error) {
          if (error.parameter().empty()) std::abort();
        }
      }
  };
  try {
    const SpectralLibrary library = readSpectralLibrary(files);
    onImages([&](const RasterInfo& info, const std::vector<int>& bands) {
      return libraryOnBands(library, info, bands);
    });
  } catch (const Error& error) {
    if (error.parameter().empty()) std::abort();
  }
  try {
    const SpectralLibrary endmembers = readEndmemberSpectra(files);
    onImages([&](const RasterInfo& info, const std::vector<int>& bands) {
      return libraryOnBands(endmembers, info, bands, "ENDMEMBERS");
    });
  } catch (const Error& error) {
    if (error.parameter().empty()) std::abort();
  }
  try {
    const DetectTargets targets = readTargets(files);
    onImages([&](const RasterInfo& info, const std::vector<int>& bands) {
      return targetsForImage(targets, info, bands);
    });
  } catch (const Error& error) {
    if (error.parameter().empty()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const QByteArray bytes(reinterpret_cast<const char*>(data) + 1, static_cast<int>(size - 1));
  QList<QByteArray> files;
  for (int from = 0;;) {
    const int at = bytes.indexOf("\n@@NEXT@@\n", from);
    files << bytes.mid(from, at < 0 ? -1 : at - from);
    if (at < 0) break;
    from = at + 10;
  }
  const QString dir = folder();
  QDir(dir).removeRecursively();
  QDir().mkpath(dir + "/usgs");
  LibraryFiles given;
  switch (data[0] % 4) {
    case 0:
      writeFile(dir + "/library.csv", files[0]);
      given.library = (dir + "/library.csv").toStdString();
      break;
    case 1:
      writeFile(dir + "/library.hdr", files[0]);
      writeFile(dir + "/library.sli", files.value(1, QByteArray(64, '\x3f')));
      given.library = (dir + "/library.sli").toStdString();
      break;
    case 2:
      writeFile(dir + "/s07_spectrum.txt", files[0]);
      given.library = (dir + "/s07_spectrum.txt").toStdString();
      if (files.size() > 1) {
        writeFile(dir + "/s07_wavelengths.txt", files[1]);
        given.wavelengths = (dir + "/s07_wavelengths.txt").toStdString();
      }
      break;
    default:
      for (int i = 0; i + 1 < files.size() || i == 0; ++i)
        writeFile(dir + QString("/usgs/s07_%1.txt").arg(i), files[i]);
      given.library = (dir + "/usgs").toStdString();
      if (files.size() > 1) {
        writeFile(dir + "/wavelengths.txt", files.back());
        given.wavelengths = (dir + "/wavelengths.txt").toStdString();
      }
  }
  readEveryWay(given);
  return 0;
}
