// The spectral libraries' own file formats: USGS splib07 ASCII (a file per spectrum, or a folder of
// them, on a spectrometer's wavelength file) and ENVI spectral libraries (.sli and its header).

#include "spectra/LibraryReaders.h"

#include "core/Error.h"
#include "io/InputFiles.h"
#include "io/SpectralMetadata.h"

#include <gdal_priv.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <limits>

namespace hyperstream::libraries {

QByteArray readSmallFile(const QString& path, const std::string& parameter) {
  return readInputFile(path.toStdString(), parameter, kLargestFile);
}

namespace {

// --- USGS splib07 ASCII -------------------------------------------------------------------------

struct UsgsFile {
  std::string title;
  std::vector<double> values;  // NaN where deleted
};

// A title line, then one number per line.
UsgsFile readUsgsFile(const QString& path, const std::string& parameter) {
  const QByteArray content = readSmallFile(path, parameter);
  const QList<QByteArray> lines = content.split('\n');
  UsgsFile file;
  file.title = lines.front().trimmed().toStdString();
  for (int i = 1; i < lines.size(); ++i) {
    const QByteArray line = lines[i].trimmed();
    if (line.isEmpty()) continue;
    bool ok = false;
    const double value = line.toDouble(&ok);
    if (!ok || std::isinf(value))
      throw Error(parameter, path.toStdString() + ", line " + std::to_string(i + 1) + ": '" +
                                 line.left(40).toStdString() +
                                 "' is not a number (USGS splib07 ASCII: a title line, then one "
                                 "value per line)");
    if (static_cast<int>(file.values.size()) == kMostChannels)
      throw Error(parameter, path.toStdString() + " has more than " +
                                 std::to_string(kMostChannels) + " values");
    file.values.push_back(value < kDeletedBelow || std::isnan(value)
                              ? std::numeric_limits<double>::quiet_NaN()
                              : value);
  }
  if (file.values.empty())
    throw Error(parameter, path.toStdString() + " holds no values after its title line");
  return file;
}

// "splib07a Record=2741: Alunite GDS84 Na03 BECKb AREF" -> "Alunite GDS84 Na03 BECKb AREF".
std::string usgsName(const std::string& title, const QString& path) {
  const QString line = text(title);
  const int record = line.indexOf(QStringLiteral("Record="));
  const int colon = record < 0 ? -1 : line.indexOf(':', record);
  const QString name = colon < 0 ? QString() : line.mid(colon + 1).simplified();
  return (name.isEmpty() ? QFileInfo(path).completeBaseName() : name).toStdString();
}

bool isUsgsListOfChannels(const std::string& title) {
  const QString line = text(title);
  return line.contains(QStringLiteral("Wavelengths"), Qt::CaseInsensitive) ||
         line.contains(QStringLiteral("Bandpass"), Qt::CaseInsensitive);
}

std::vector<double> usgsWavelengths(const std::string& path) {
  if (path.empty())
    throw Error("LIBRARY_WAVELENGTHS",
                "USGS ASCII spectra hold values only: give the wavelength file of the "
                "spectrometer that measured them (e.g. splib07a_Wavelengths_ASD_0.35-2.5_microns_"
                "2151_ch.txt)");
  const UsgsFile file = readUsgsFile(text(path), "LIBRARY_WAVELENGTHS");
  std::vector<double> nanometres;
  for (const double value : file.values) {
    if (!(value > 0))
      throw Error("LIBRARY_WAVELENGTHS", path + " lists a wavelength that is not positive");
    nanometres.push_back(toNanometres(value, ""));
  }
  return nanometres;
}

}  // namespace

SpectralLibrary readUsgs(const LibraryFiles& files) {
  SpectralLibrary library;
  library.format = "USGS splib07 ASCII";
  library.wavelengths = usgsWavelengths(files.wavelengths);
  library.files.push_back(plainInputFile("LIBRARY_WAVELENGTHS", files.wavelengths));
  QStringList paths;
  const QFileInfo where(text(files.library));
  if (where.isDir()) {
    const QDir folder(where.absoluteFilePath());
    for (const QString& name : folder.entryList({QStringLiteral("*.txt")}, QDir::Files, QDir::Name))
      paths << folder.absoluteFilePath(name);
  } else {
    paths << where.absoluteFilePath();
  }
  const QString wavelengthFile = QFileInfo(text(files.wavelengths)).absoluteFilePath();
  for (const QString& path : paths) {
    if (path == wavelengthFile) continue;
    UsgsFile file = readUsgsFile(path, "LIBRARY");
    library.files.push_back(plainInputFile("LIBRARY", path.toStdString()));
    if (isUsgsListOfChannels(file.title)) continue;
    if (file.values.size() != library.wavelengths.size())
      throw Error("LIBRARY", path.toStdString() + " has " + std::to_string(file.values.size()) +
                                 " channels, the wavelength file " +
                                 std::to_string(library.wavelengths.size()) +
                                 ": give the spectra of one spectrometer at a time, with its "
                                 "wavelength file (LIBRARY_WAVELENGTHS)");
    library.spectra.push_back({usgsName(file.title, path), std::move(file.values)});
  }
  if (library.spectra.empty())
    throw Error("LIBRARY", files.library + " holds no USGS spectra (.txt files of values)");
  return library;
}

namespace {

// --- ENVI spectral library ----------------------------------------------------------------------

struct EnviLayout {
  int64_t channels = 0, spectra = 0, offset = 0;
  GDALDataType type = GDT_Unknown;
  bool bigEndian = false;
};

// ENVI's "data type" codes of real numbers as GDAL's types.
GDALDataType enviDataType(int64_t code) {
  switch (code) {
    case 1:
      return GDT_Byte;
    case 2:
      return GDT_Int16;
    case 3:
      return GDT_Int32;
    case 4:
      return GDT_Float32;
    case 5:
      return GDT_Float64;
    case 12:
      return GDT_UInt16;
    case 13:
      return GDT_UInt32;
    case 14:
      return GDT_Int64;
    case 15:
      return GDT_UInt64;
    default:
      return GDT_Unknown;
  }
}

// Every value of the library as float64, in the host's byte order (GDAL swaps and converts).
std::vector<double> decodeValues(const QByteArray& data, const EnviLayout& layout) {
  const int size = GDALGetDataTypeSizeBytes(layout.type);
  const int64_t count = layout.channels * layout.spectra;
  const auto* first = reinterpret_cast<const unsigned char*>(data.constData()) + layout.offset;
  std::vector<unsigned char> raw(first, first + count * size);
  if (layout.bigEndian == (CPL_IS_LSB != 0)) GDALSwapWordsEx(raw.data(), size, count, size);
  std::vector<double> values(static_cast<size_t>(count));
  GDALCopyWords64(raw.data(), layout.type, size, values.data(), GDT_Float64, sizeof(double), count);
  return values;
}

int64_t headerInteger(const std::vector<std::pair<std::string, std::string>>& fields,
                      const std::string& key, const std::string& header, bool required) {
  for (const auto& [name, value] : fields) {
    if (name != key) continue;
    bool ok = false;
    const qlonglong number = text(value).toLongLong(&ok);
    if (!ok || number < 0)
      throw Error("LIBRARY", QString("%1: '%2 = %3' is not a count")
                                 .arg(text(header), text(key), text(value))
                                 .toStdString());
    return number;
  }
  if (required) throw Error("LIBRARY", header + " has no '" + key + "'");
  return 0;
}

std::string headerText(const std::vector<std::pair<std::string, std::string>>& fields,
                       const std::string& key) {
  for (const auto& [name, value] : fields)
    if (name == key) return value;
  return {};
}

QStringList braceList(const std::string& value) {
  QString list = text(value).trimmed();
  if (list.startsWith('{')) list = list.mid(1);
  if (list.endsWith('}')) list.chop(1);
  QStringList items = list.split(',');
  for (QString& item : items) item = item.trimmed();
  if (items.size() == 1 && items.front().isEmpty()) items.clear();
  return items;
}

// "lib.sli" -> "lib.hdr" or "lib.sli.hdr"; "lib.hdr" -> "lib.sli" (or "lib").
std::pair<QString, QString> enviFiles(const QString& path) {
  const QFileInfo info(path);
  const QString stem = info.path() + '/' + info.completeBaseName();
  if (info.suffix().compare(QStringLiteral("hdr"), Qt::CaseInsensitive) == 0) {
    for (const QString& data : {stem + ".sli", stem + ".SLI", stem})
      if (QFileInfo(data).isFile()) return {data, path};
    throw Error("LIBRARY", path.toStdString() + ": no library data beside it (" +
                               (stem + ".sli").toStdString() + ")");
  }
  for (const QString& header : {stem + ".hdr", path + ".hdr", stem + ".HDR"})
    if (QFileInfo(header).isFile()) return {path, header};
  throw Error("LIBRARY", path.toStdString() + " has no ENVI header beside it (" +
                             (stem + ".hdr").toStdString() + ")");
}

EnviLayout enviLayout(const std::vector<std::pair<std::string, std::string>>& fields,
                      const std::string& header, qint64 dataBytes) {
  const QString fileType = text(headerText(fields, "file type"));
  if (!fileType.contains(QStringLiteral("Spectral Library"), Qt::CaseInsensitive))
    throw Error("LIBRARY", header + " describes an '" + fileType.toStdString() +
                               "' file, not an ENVI Spectral Library");
  EnviLayout layout;
  layout.channels = headerInteger(fields, "samples", header, true);
  layout.spectra = headerInteger(fields, "lines", header, true);
  layout.offset = headerInteger(fields, "header offset", header, false);
  const int64_t code = headerInteger(fields, "data type", header, true);
  layout.type = enviDataType(code);
  layout.bigEndian = headerInteger(fields, "byte order", header, false) == 1;
  if (headerInteger(fields, "bands", header, false) > 1)
    throw Error("LIBRARY", header + " has several bands: a spectral library has one");
  if (layout.type == GDT_Unknown)
    throw Error("LIBRARY", header + ": data type " + std::to_string(code) +
                               " is not a real number type (1-5, 12-15)");
  if (layout.channels < 1 || layout.spectra < 1 || layout.channels > kMostChannels ||
      layout.channels * layout.spectra > kMostValues)
    throw Error("LIBRARY", header + ": " + std::to_string(layout.spectra) + " spectra of " +
                               std::to_string(layout.channels) +
                               " values is not a library this reads (at most " +
                               std::to_string(kMostValues) + " values)");
  const int64_t needed =
      layout.offset + layout.channels * layout.spectra * GDALGetDataTypeSizeBytes(layout.type);
  if (needed > dataBytes)
    throw Error("LIBRARY", header + " describes " + std::to_string(needed) +
                               " bytes, the library's data file has " + std::to_string(dataBytes));
  return layout;
}

}  // namespace

SpectralLibrary readEnvi(const std::string& path) {
  const auto [dataPath, headerPath] = enviFiles(text(path));
  const QByteArray headerBytes = readSmallFile(headerPath, "LIBRARY");
  const std::vector<std::pair<std::string, std::string>> fields = parseEnviHeader(headerBytes);
  const QByteArray data = readSmallFile(dataPath, "LIBRARY");
  const EnviLayout layout = enviLayout(fields, headerPath.toStdString(), data.size());

  SpectralLibrary library;
  library.format = "ENVI spectral library";
  library.files = {plainInputFile("LIBRARY", dataPath.toStdString()),
                   plainInputFile("LIBRARY", headerPath.toStdString())};
  const QStringList names = braceList(headerText(fields, "spectra names"));
  const std::string units = headerText(fields, "wavelength units");
  for (const QString& item : braceList(headerText(fields, "wavelength"))) {
    bool ok = false;
    const double value = item.toDouble(&ok);
    if (!ok || !(value > 0))
      throw Error("LIBRARY", headerPath.toStdString() + ": wavelength '" + item.toStdString() +
                                 "' is not a positive number");
    library.wavelengths.push_back(toNanometres(value, units));
  }
  if (!library.wavelengths.empty() &&
      static_cast<int64_t>(library.wavelengths.size()) != layout.channels)
    throw Error("LIBRARY",
                headerPath.toStdString() + " lists " + std::to_string(library.wavelengths.size()) +
                    " wavelengths for spectra of " + std::to_string(layout.channels) + " values");
  bool hasIgnored = false;
  const QString ignoreText = text(headerText(fields, "data ignore value"));
  double ignored = ignoreText.toDouble(&hasIgnored);
  if (!ignoreText.isEmpty() && !hasIgnored)
    throw Error("LIBRARY", headerPath.toStdString() + ": 'data ignore value = " +
                               ignoreText.toStdString() + "' is not a number");
  // Compared in the file's own type: a Float32 library's -1.23e34 is not the double -1.23e34.
  if (hasIgnored) {
    std::vector<unsigned char> sample(static_cast<size_t>(GDALGetDataTypeSizeBytes(layout.type)));
    GDALCopyWords64(&ignored, GDT_Float64, 0, sample.data(), layout.type, 0, 1);
    GDALCopyWords64(sample.data(), layout.type, 0, &ignored, GDT_Float64, 0, 1);
  }
  const std::vector<double> values = decodeValues(data, layout);
  for (int64_t s = 0; s < layout.spectra; ++s) {
    Target spectrum;
    spectrum.name = s < names.size() && !names[static_cast<int>(s)].isEmpty()
                        ? names[static_cast<int>(s)].toStdString()
                        : std::to_string(s + 1);
    for (int64_t c = 0; c < layout.channels; ++c) {
      const double value = values[static_cast<size_t>(s * layout.channels + c)];
      // USGS's deleted channels (-1.23e34) are no reflectance whatever the header says.
      spectrum.spectrum.push_back((hasIgnored && value == ignored) || !std::isfinite(value) ||
                                          value < kDeletedBelow
                                      ? std::numeric_limits<double>::quiet_NaN()
                                      : value);
    }
    library.spectra.push_back(std::move(spectrum));
  }
  return library;
}

}  // namespace hyperstream::libraries
