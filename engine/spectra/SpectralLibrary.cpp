#include "spectra/SpectralLibrary.h"

#include "core/Error.h"
#include "io/EmptyBands.h"
#include "io/InputFiles.h"
#include "io/SpectralMetadata.h"
#include "spectra/EndmemberTable.h"
#include "spectra/LibraryReaders.h"

#include <gdal_priv.h>
#include <ogrsf_frmts.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QString>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>

namespace hyperstream {

namespace {

using libraries::kDeletedBelow;
using libraries::kMostChannels;
using libraries::kMostValues;
using libraries::readSmallFile;
using libraries::text;

// The response's window: ±3σ holds 99.73 % of a Gaussian.
constexpr double kWindowSigmas = 3;
constexpr double kSigmasPerFwhm = 2.3548200450309493;  // 2 sqrt(2 ln 2)

double standardNormalBelow(double z) {
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

// --- Resampling ---------------------------------------------------------------------------------

// The band's value from one spectrum; throws Error("LIBRARY") where it has none.
double bandValue(const Target& spectrum, const std::vector<bool>& present,
                 const std::vector<double>& wavelengths, double centre, double fwhm, int band,
                 const std::string& parameter) {
  // A channel at the band's centre (within 1 % of its FWHM: wavelengths written rounded) in a
  // library no finer than the image's bands (one convolved to the sensor): its value as it is.
  const double near = std::max(1e-9 * centre, 0.01 * fwhm);
  const auto at = std::lower_bound(wavelengths.begin(), wavelengths.end(), centre - near);
  const auto c = at - wavelengths.begin();
  const auto last = static_cast<ptrdiff_t>(wavelengths.size()) - 1;
  if (at != wavelengths.end() && std::abs(*at - centre) <= near && present[c]) {
    const double spacing =
        (wavelengths[std::min(c + 1, last)] - wavelengths[std::max<ptrdiff_t>(c - 1, 0)]) /
        (c == 0 || c == last ? 1 : 2);
    if (spacing >= fwhm / 2) return spectrum.spectrum[c];
  }
  const std::vector<ChannelWeight> response = bandResponse(wavelengths, present, centre, fwhm);
  if (response.empty())
    throw Error(parameter,
                QString("'%1' has no values around band %2 (%3 nm, FWHM %4 nm); the library "
                        "spans %5-%6 nm: leave the band out (BANDS, EXCLUDE_NM)")
                    .arg(text(spectrum.name))
                    .arg(band)
                    .arg(centre, 0, 'g', 6)
                    .arg(fwhm, 0, 'g', 3)
                    .arg(wavelengths.front(), 0, 'g', 6)
                    .arg(wavelengths.back(), 0, 'g', 6)
                    .toStdString());
  double value = 0;
  for (const ChannelWeight& w : response) value += w.weight * spectrum.spectrum[w.channel];
  return value;
}

void checkAscending(const std::vector<double>& wavelengths, const std::string& parameter) {
  if (wavelengths.size() < 2)
    throw Error(parameter, "a library on wavelengths needs at least two channels");
  for (size_t c = 1; c < wavelengths.size(); ++c)
    if (!(wavelengths[c] > wavelengths[c - 1]))
      throw Error(parameter, "the library's wavelengths are not in ascending order (channel " +
                                 std::to_string(c + 1) + ")");
}

// --- Tables: CSV files and the endmembers' point layers ---------------------------------------

// "wavelength_nm", "Wavelength (um)", "lambda", "nm": a column of wavelengths, and its units
// ("" when it names none: then values below 100 are micrometres).
bool isWavelengthColumn(const QString& name, std::string& units) {
  const QString n = name.trimmed().toLower();
  const bool micro = n.contains(QStringLiteral("um")) || n.contains(QString("µm")) ||
                     n.contains(QStringLiteral("micro"));
  const bool nano = n.contains(QStringLiteral("nm")) || n.contains(QStringLiteral("nano"));
  units = micro ? "um" : nano ? "nm" : "";
  return n.startsWith(QStringLiteral("wave")) || n.startsWith(QStringLiteral("lambda")) ||
         n == QLatin1String("wl") || n == QLatin1String("nm") || n == QLatin1String("um") ||
         n == QString("µm") || n == QLatin1String("micrometers") ||
         n == QLatin1String("nanometers");
}

// A table with a wavelength column, then one column per spectrum (its name in the header), a
// row per wavelength (as libraries are laid out, and as `hyperstream synth --truth` writes its
// endmembers); an empty or NaN field is no value there.
SpectralLibrary readColumnLayout(const QStringList& lines, const std::string& path,
                                 const std::string& units) {
  const QStringList header = lines[0].split(',');
  if (header.size() < 2)
    throw Error("LIBRARY", path + ": a wavelength column, then one column per spectrum");
  SpectralLibrary library;
  library.format = "CSV of spectra by column";
  for (int c = 1; c < header.size(); ++c) {
    const QString name = header[c].trimmed().remove('"');
    library.spectra.push_back({name.isEmpty() ? std::to_string(c) : name.toStdString(), {}});
  }
  std::vector<std::pair<double, std::vector<double>>> rows;
  for (int l = 1; l < lines.size(); ++l) {
    const QStringList fields = lines[l].split(',');
    const std::string where = path + " line " + std::to_string(l + 1);
    if (fields.size() != header.size())
      throw Error("LIBRARY", where + " has " + std::to_string(fields.size()) +
                                 " fields, the header " + std::to_string(header.size()));
    bool ok = false;
    const double wavelength = fields[0].trimmed().toDouble(&ok);
    if (!ok || !(wavelength > 0) || !std::isfinite(wavelength))
      throw Error("LIBRARY", where + ": '" + fields[0].trimmed().left(40).toStdString() +
                                 "' is not a wavelength (a positive number)");
    std::vector<double> values;
    for (int c = 1; c < fields.size(); ++c) {
      const QString field = fields[c].trimmed();
      const double value = field.isEmpty() ? std::nan("") : field.toDouble(&ok);
      if (!field.isEmpty() && (!ok || std::isinf(value)))
        throw Error("LIBRARY", where + ": '" + field.left(40).toStdString() +
                                   "' is not a number (leave a field empty where a spectrum "
                                   "has no value)");
      values.push_back(value < kDeletedBelow ? std::nan("") : value);
    }
    rows.emplace_back(toNanometres(wavelength, units), std::move(values));
    if (static_cast<int>(rows.size()) > kMostChannels)
      throw Error("LIBRARY", path + " has more than " + std::to_string(kMostChannels) + " rows");
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [wavelength, values] : rows) {
    library.wavelengths.push_back(wavelength);
    for (size_t s = 0; s < values.size(); ++s) library.spectra[s].spectrum.push_back(values[s]);
  }
  return library;
}

// A CSV: the endmembers' table (a row per spectrum, a column per band), or a column per spectrum
// with a wavelength column first.
SpectralLibrary readCsv(const std::string& path) {
  const QByteArray content = readSmallFile(text(path), "LIBRARY");
  const QStringList lines = QString::fromUtf8(content).remove('\r').split('\n', Qt::SkipEmptyParts);
  std::string units;
  if (!lines.isEmpty() && isWavelengthColumn(lines[0].section(',', 0, 0).remove('"'), units))
    return readColumnLayout(lines, path, units);
  const EndmemberTable table = parseEndmembersCsv(content, path, "LIBRARY");
  SpectralLibrary library;
  library.format = "CSV";
  library.columns = table.bandNames;
  for (const Endmember& e : table.endmembers) library.spectra.push_back({e.id, e.spectrum});
  return library;
}

// The points `hyperstream endmembers` writes (GeoPackage, GeoJSON, shapefile): each feature's id
// and its numeric fields but row and col, named as the table's band columns.
SpectralLibrary readPointLayer(const LibraryFiles& files) {
  ensureGdalDrivers();  // the command line reads targets before any job starts GDAL
  QuietGdalErrors quiet;
  DatasetPtr dataset(GDALDataset::FromHandle(GDALOpenEx(
      files.library.c_str(), GDAL_OF_VECTOR | GDAL_OF_READONLY, nullptr, nullptr, nullptr)));
  if (!dataset)
    throw Error("LIBRARY", "cannot open " + files.library +
                               " as a vector layer: " + std::string(CPLGetLastErrorMsg()));
  OGRLayer* layer =
      files.layer.empty() ? dataset->GetLayer(0) : dataset->GetLayerByName(files.layer.c_str());
  if (!layer)
    throw Error("LIBRARY", files.library + " has no layer" +
                               (files.layer.empty() ? std::string() : " '" + files.layer + "'"));
  OGRFeatureDefn* definition = layer->GetLayerDefn();
  SpectralLibrary library;
  library.format = "point layer";
  char** names = dataset->GetFileList();
  for (char** name = names; name && *name; ++name)
    library.files.push_back(plainInputFile("LIBRARY", *name));
  CSLDestroy(names);
  std::vector<int> valueFields;
  int idField = -1;
  for (int f = 0; f < definition->GetFieldCount(); ++f) {
    const OGRFieldDefn* field = definition->GetFieldDefn(f);
    const QString name = QString::fromUtf8(field->GetNameRef());
    const OGRFieldType type = field->GetType();
    if (name.compare(QStringLiteral("id"), Qt::CaseInsensitive) == 0 ||
        name.compare(QStringLiteral("name"), Qt::CaseInsensitive) == 0) {
      idField = f;
    } else if ((type == OFTReal || type == OFTInteger || type == OFTInteger64) &&
               name.compare(QStringLiteral("row"), Qt::CaseInsensitive) != 0 &&
               name.compare(QStringLiteral("col"), Qt::CaseInsensitive) != 0 &&
               name.compare(QStringLiteral("fid"), Qt::CaseInsensitive) != 0) {
      valueFields.push_back(f);
      library.columns.push_back(name.toStdString());
    }
  }
  if (valueFields.empty())
    throw Error("LIBRARY", files.library +
                               ": the layer has no numeric fields to read spectra "
                               "from (a field per band, as the endmembers' points)");
  layer->ResetReading();
  for (OGRFeature* raw = layer->GetNextFeature(); raw; raw = layer->GetNextFeature()) {
    const std::unique_ptr<OGRFeature, void (*)(OGRFeature*)> feature(raw,
                                                                     OGRFeature::DestroyFeature);
    Target spectrum;
    spectrum.name = idField >= 0 && feature->IsFieldSetAndNotNull(idField)
                        ? feature->GetFieldAsString(idField)
                        : std::to_string(feature->GetFID());
    for (size_t v = 0; v < valueFields.size(); ++v) {
      if (!feature->IsFieldSetAndNotNull(valueFields[v]))
        throw Error("LIBRARY", files.library + ": '" + spectrum.name + "' has no value in '" +
                                   library.columns[v] + "'");
      spectrum.spectrum.push_back(feature->GetFieldAsDouble(valueFields[v]));
    }
    library.spectra.push_back(std::move(spectrum));
    if (static_cast<int64_t>(library.spectra.size()) * static_cast<int64_t>(valueFields.size()) >
        kMostValues)
      throw Error("LIBRARY",
                  files.library + " holds more than " + std::to_string(kMostValues) + " values");
  }
  return library;
}

bool isVectorFile(const QString& suffix) {
  return suffix == QLatin1String("gpkg") || suffix == QLatin1String("geojson") ||
         suffix == QLatin1String("json") || suffix == QLatin1String("shp");
}

// --- Columns matched to bands -------------------------------------------------------------------

// A column named "band N" (any case, with or without the space): N; else 0.
int bandNumberNamed(const std::string& column) {
  static const QRegularExpression pattern(QStringLiteral("^band\\s*(\\d{1,6})$"),
                                          QRegularExpression::CaseInsensitiveOption);
  const QRegularExpressionMatch match = pattern.match(text(column).trimmed());
  return match.hasMatch() ? match.captured(1).toInt() : 0;
}

// A column named by a wavelength ("2212.5 nm", "2.2125 um", "2212.5"): it in nm; else NaN.
double wavelengthNamed(const std::string& column) {
  static const QRegularExpression pattern(
      QStringLiteral("^([0-9]+(?:\\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)\\s*([a-zA-Zµ]*)$"));
  const QRegularExpressionMatch match = pattern.match(text(column).trimmed());
  if (!match.hasMatch()) return std::nan("");
  const QString unit = match.captured(2).toLower();
  if (!unit.isEmpty() && unit != "nm" && unit != "um" && unit != QString("µm") &&
      !unit.startsWith("nano") && !unit.startsWith("micro"))
    return std::nan("");
  return toNanometres(match.captured(1).toDouble(), unit.toStdString());
}

// The column that gives band `band` (1-based) named `name`: a column of that name, else one named
// "band N" with its number, else one named by its wavelength (within 0.1 %); -1 for none.
int columnOfBand(const std::vector<std::string>& columns, const std::string& name, int band,
                 double wavelength) {
  const auto exact = std::find(columns.begin(), columns.end(), name);
  if (exact != columns.end()) return static_cast<int>(exact - columns.begin());
  for (size_t c = 0; c < columns.size(); ++c)
    if (bandNumberNamed(columns[c]) == band) return static_cast<int>(c);
  if (!(wavelength > 0)) return -1;
  for (size_t c = 0; c < columns.size(); ++c)
    if (std::abs(wavelengthNamed(columns[c]) - wavelength) <= 1e-3 * wavelength)
      return static_cast<int>(c);
  return -1;
}

// The spectra of a table on the selected bands: each band's column (columnOfBand); where the
// columns give none of the bands, the columns in order when there is one per selected band.
std::vector<Target> columnsOnBands(const SpectralLibrary& table, const RasterInfo& info,
                                   const std::vector<int>& bands, const std::string& parameter) {
  const std::vector<std::string> names = bandColumnNames(info, bands);
  std::vector<int> columns, lacking;
  QStringList missing;
  for (size_t i = 0; i < bands.size(); ++i) {
    const int column =
        columnOfBand(table.columns, names[i], bands[i], info.wavelengths[bands[i] - 1]);
    columns.push_back(column);
    if (column >= 0) continue;
    lacking.push_back(bands[i]);
    if (missing.size() < 3) missing << QString("band %1 ('%2')").arg(bands[i]).arg(text(names[i]));
  }
  const auto found = std::count_if(columns.begin(), columns.end(), [](int c) { return c >= 0; });
  // A column that names no band of the image at all is a mistake, not a band left unselected.
  if (found > 0) {
    std::vector<int> everyBand(static_cast<size_t>(info.bandCount));
    std::iota(everyBand.begin(), everyBand.end(), 1);
    const std::vector<std::string> allNames = bandColumnNames(info, everyBand);
    for (const std::string& column : table.columns) {
      bool names = false;
      for (int b = 1; b <= info.bandCount && !names; ++b)
        names = columnOfBand({column}, allNames[b - 1], b, info.wavelengths[b - 1]) == 0;
      if (!names)
        throw Error(parameter, "the table's column '" + column +
                                   "' names no band of the image (a band's column is named as "
                                   "the endmembers' table names it, 'band N', or by its "
                                   "wavelength): remove it or name it so");
    }
  }
  if (found == 0 && table.columns.size() == bands.size())
    for (size_t i = 0; i < bands.size(); ++i) columns[i] = static_cast<int>(i);
  else if (found < static_cast<int64_t>(bands.size()))
    throw BandsNotGiven(
        parameter,
        QString("the table's %1 columns give %2 of the %3 selected bands (none for %4%5; "
                "a band's column is named as the endmembers' table names it, '%6'%7, or "
                "by its wavelength): select the bands it gives (BANDS) or give a column "
                "for each")
            .arg(table.columns.size())
            .arg(found)
            .arg(bands.size())
            .arg(missing.join(", "))
            .arg(static_cast<int64_t>(bands.size()) - found > missing.size() ? ", ..." : "")
            .arg(text(names.front()))
            .arg(bandNumberNamed(names.front()) == bands.front()
                     ? QString()
                     : QString(", or 'band %1'").arg(bands.front()))
            .toStdString(),
        lacking);
  std::vector<Target> selected;
  for (const Target& spectrum : table.spectra) {
    if (spectrum.spectrum.size() != table.columns.size())
      throw Error(parameter, QString("'%1' has %2 values, but the table has %3 columns")
                                 .arg(text(spectrum.name))
                                 .arg(spectrum.spectrum.size())
                                 .arg(table.columns.size())
                                 .toStdString());
    Target onBands{spectrum.name, {}};
    for (const int column : columns) onBands.spectrum.push_back(spectrum.spectrum[column]);
    selected.push_back(std::move(onBands));
  }
  return selected;
}

}  // namespace

SpectralLibrary readSpectralLibrary(const LibraryFiles& files) {
  const QFileInfo info(text(files.library));
  if (!info.exists()) throw Error("LIBRARY", files.library + " does not exist");
  if (!info.isDir()) checkInputFile(files.library, "LIBRARY");  // a folder: USGS spectra
  const QString suffix = info.suffix().toLower();
  const bool usgs =
      info.isDir() || (suffix != QLatin1String("csv") && !isVectorFile(suffix) &&
                       suffix != QLatin1String("sli") && suffix != QLatin1String("hdr"));
  if (!usgs && !files.wavelengths.empty())
    throw Error("LIBRARY_WAVELENGTHS",
                "a wavelength file is for USGS spectra, which hold values only; '" + files.library +
                    "' gives its spectra's bands or wavelengths itself: leave "
                    "the wavelength file out");
  SpectralLibrary library;
  if (suffix == QLatin1String("csv")) {
    library = readCsv(files.library);
    library.files = {plainInputFile("LIBRARY", files.library)};
  } else if (isVectorFile(suffix)) {
    library = readPointLayer(files);
  } else if (suffix == QLatin1String("sli") || suffix == QLatin1String("hdr")) {
    library = libraries::readEnvi(files.library);
  } else {
    library = libraries::readUsgs(files);
  }
  if (library.spectra.empty()) throw Error("LIBRARY", files.library + " holds no spectra");
  // Names become output bands and classes: two of one name could not be told apart.
  std::vector<std::string> names;
  for (const Target& spectrum : library.spectra) names.push_back(spectrum.name);
  std::sort(names.begin(), names.end());
  const auto twice = std::adjacent_find(names.begin(), names.end());
  if (twice != names.end())
    throw Error("LIBRARY",
                files.library + " names two spectra '" + *twice + "': give each its own name");
  if (!library.wavelengths.empty())
    checkAscending(library.wavelengths,
                   library.format == "USGS splib07 ASCII" ? "LIBRARY_WAVELENGTHS" : "LIBRARY");
  return library;
}

std::vector<double> widthsFromSpacing(const std::vector<double>& centres) {
  const size_t n = centres.size();
  std::vector<double> widths(n, std::numeric_limits<double>::quiet_NaN());
  if (n < 2) return widths;
  widths.front() = centres[1] - centres[0];
  widths.back() = centres[n - 1] - centres[n - 2];
  for (size_t i = 1; i + 1 < n; ++i) widths[i] = (centres[i + 1] - centres[i - 1]) / 2;
  return widths;
}

std::vector<ChannelWeight> bandResponse(const std::vector<double>& wavelengths,
                                        const std::vector<bool>& present, double centre,
                                        double fwhm) {
  const int n = static_cast<int>(wavelengths.size());
  const double sigma = fwhm / kSigmasPerFwhm;
  const double low = centre - kWindowSigmas * sigma, high = centre + kWindowSigmas * sigma;
  // Channel c's share of the wavelengths: from halfway to channel c-1 to halfway to c+1.
  const auto cellStart = [&](int c) {
    return c == 0 ? wavelengths[0] - (wavelengths[1] - wavelengths[0]) / 2
                  : (wavelengths[c - 1] + wavelengths[c]) / 2;
  };
  const auto cellEnd = [&](int c) {
    return c == n - 1 ? wavelengths[n - 1] + (wavelengths[n - 1] - wavelengths[n - 2]) / 2
                      : (wavelengths[c] + wavelengths[c + 1]) / 2;
  };
  std::vector<ChannelWeight> weights;
  double total = 0;
  bool below = false, above = false;  // present channels on both sides of the centre
  int c = static_cast<int>(std::lower_bound(wavelengths.begin(), wavelengths.end(), low) -
                           wavelengths.begin());
  c = std::max(0, c - 1);
  for (; c < n && cellStart(c) < high; ++c) {
    const double from = std::max(cellStart(c), low), to = std::min(cellEnd(c), high);
    if (!(to > from) || !present[c]) continue;
    const double weight =
        standardNormalBelow((to - centre) / sigma) - standardNormalBelow((from - centre) / sigma);
    below |= wavelengths[c] <= centre;
    above |= wavelengths[c] >= centre;
    weights.push_back({c, weight});
    total += weight;
  }
  const double window = standardNormalBelow(kWindowSigmas) - standardNormalBelow(-kWindowSigmas);
  if (!below || !above || !(total >= 0.5 * window)) return {};
  for (ChannelWeight& w : weights) w.weight /= total;
  return weights;
}

std::vector<Target> libraryOnBands(const SpectralLibrary& library, const RasterInfo& info,
                                   const std::vector<int>& bands, const std::string& parameter) {
  if (!library.columns.empty()) return columnsOnBands(library, info, bands, parameter);
  if (library.wavelengths.empty()) {  // an ENVI library without wavelengths: band by band
    for (const Target& spectrum : library.spectra)
      if (spectrum.spectrum.size() != bands.size())
        throw Error(parameter, "the library gives no wavelengths and '" + spectrum.name + "' has " +
                                   std::to_string(spectrum.spectrum.size()) + " values for " +
                                   std::to_string(bands.size()) + " selected bands");
    return library.spectra;
  }
  for (const int band : bands)
    if (!(info.wavelengths[band - 1] > 0))
      throw Error("INPUT", "band " + std::to_string(band) +
                               " has no wavelength to resample the library to (the image "
                               "needs wavelengths in its metadata, or an ENVI header beside it)");
  const std::vector<double> spacing = widthsFromSpacing(info.wavelengths);
  std::vector<Target> resampled;
  for (const Target& spectrum : library.spectra) {
    Target onBands{spectrum.name, {}};
    std::vector<bool> present(spectrum.spectrum.size());
    for (size_t c = 0; c < present.size(); ++c) present[c] = !std::isnan(spectrum.spectrum[c]);
    for (const int band : bands) {
      const double centre = info.wavelengths[band - 1];
      const double given = info.fwhm.empty() ? std::nan("") : info.fwhm[band - 1];
      const double fwhm = given > 0 ? given : spacing[band - 1];
      if (!(fwhm > 0))
        throw Error("INPUT", "band " + std::to_string(band) +
                                 " has no FWHM and no neighbour to take a width from");
      onBands.spectrum.push_back(
          bandValue(spectrum, present, library.wavelengths, centre, fwhm, band, parameter));
    }
    resampled.push_back(std::move(onBands));
  }
  return resampled;
}

// The library's files, as the parameters `table` and `wavelengths` name them.
std::vector<InputFile> renamedFiles(const std::vector<InputFile>& files, const std::string& table,
                                    const std::string& wavelengths) {
  std::vector<InputFile> renamed = files;
  for (InputFile& file : renamed)
    file.parameter = file.parameter == "LIBRARY_WAVELENGTHS" ? wavelengths : table;
  return renamed;
}

DetectTargets readTargets(const LibraryFiles& files) {
  try {
    const SpectralLibrary library = readSpectralLibrary(files);
    return {library.columns, library.spectra, library.wavelengths,
            renamedFiles(library.files, "TARGETS", "TARGET_WAVELENGTHS")};
  } catch (const Error& error) {  // the library's errors, named as detection's parameters
    throw Error(error.parameter() == "LIBRARY_WAVELENGTHS" ? "TARGET_WAVELENGTHS" : "TARGETS",
                error.what());
  }
}

std::vector<Target> targetsForImage(const DetectTargets& table, const RasterInfo& info,
                                    const std::vector<int>& bands) {
  SpectralLibrary library;
  library.format = "targets";
  library.spectra = table.targets;
  library.wavelengths = table.wavelengths;
  library.columns = table.columns;
  return libraryOnBands(library, info, bands, "TARGETS");
}

SpectralLibrary readEndmemberSpectra(const LibraryFiles& files) {
  try {
    SpectralLibrary library = readSpectralLibrary(files);
    library.files = renamedFiles(library.files, "ENDMEMBERS", "ENDMEMBERS");
    return library;
  } catch (const Error& error) {  // the library's errors, named as the abundances' parameter
    throw Error("ENDMEMBERS", error.what());
  }
}

}  // namespace hyperstream
