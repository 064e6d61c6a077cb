#include "io/SpectralMetadata.h"

#include "io/InputFiles.h"

#include <QFileInfo>
#include <QString>
#include <QStringList>

#include <algorithm>
#include <cmath>

namespace hyperstream {

namespace {

constexpr int64_t kLargestHeader = int64_t{16} << 20;

// "{400.1, 410.2, ...}" or "400.1,410.2": the numbers, NaN for an entry that is not one.
std::vector<double> numberList(const QString& text) {
  QString list = text.trimmed();
  list.remove('{').remove('}');
  std::vector<double> values;
  for (const QString& item : list.split(',', Qt::SkipEmptyParts)) {
    bool ok = false;
    const double value = item.trimmed().toDouble(&ok);
    values.push_back(ok ? value : std::nan(""));
  }
  return values;
}

std::vector<double> inNanometres(std::vector<double> values, const std::string& units) {
  for (double& value : values) value = toNanometres(value, units);
  return values;
}

bool complete(const std::vector<double>& values, int bands) {
  if (static_cast<int>(values.size()) != bands) return false;
  for (double value : values)
    if (!std::isfinite(value) || value <= 0) return false;
  return true;
}

std::vector<bool> goodFlags(const std::vector<double>& flags, int bands, std::string& problem) {
  if (flags.empty()) return {};
  if (static_cast<int>(flags.size()) != bands) {
    problem = "the bad-band list has " + std::to_string(flags.size()) + " entries for " +
              std::to_string(bands) + " bands";
    return {};
  }
  std::vector<bool> good(flags.size());
  std::transform(flags.begin(), flags.end(), good.begin(), [](double flag) { return flag != 0; });
  return good;
}

// Per-band items of `domain`: each band's `key`, NaN where a band has none.
std::vector<double> bandItems(GDALDataset& dataset, const char* key, const char* domain) {
  std::vector<double> values;
  for (int b = 1; b <= dataset.GetRasterCount(); ++b) {
    const char* text = dataset.GetRasterBand(b)->GetMetadataItem(key, domain);
    values.push_back(text ? CPLAtof(text) : std::nan(""));
  }
  return values;
}

const char* firstBandItem(GDALDataset& dataset, const char* key) {
  for (int b = 1; b <= dataset.GetRasterCount(); ++b)
    if (const char* text = dataset.GetRasterBand(b)->GetMetadataItem(key)) return text;
  return nullptr;
}

// The ENVI header beside a file that is not itself ENVI, if there is one.
QByteArray headerBeside(GDALDataset& dataset, const std::string& path) {
  GDALDriver* driver = dataset.GetDriver();
  if (driver && EQUAL(driver->GetDescription(), "ENVI")) return {};
  const QFileInfo file(QString::fromStdString(path));
  if (!file.isFile()) return {};
  for (const QString& candidate :
       {file.path() + "/" + file.completeBaseName() + ".hdr", file.filePath() + ".hdr"}) {
    if (!QFileInfo(candidate).isFile()) continue;
    return readInputFile(candidate.toStdString(), "INPUT", kLargestHeader);
  }
  return {};
}

}  // namespace

double toNanometres(double wavelength, const std::string& units) {
  const QString unit = QString::fromStdString(units).trimmed().toLower();
  const bool micrometres = unit.startsWith("micro") || unit == "um" || unit == QString("µm") ||
                           (unit.isEmpty() && wavelength < 100);
  return micrometres ? wavelength * 1000 : wavelength;
}

std::vector<std::pair<std::string, std::string>> parseEnviHeader(const QByteArray& text) {
  std::vector<std::pair<std::string, std::string>> fields;
  const QString all = QString::fromUtf8(text);
  int at = 0;
  while (at < all.size()) {
    const int lineEnd = all.indexOf('\n', at) < 0 ? all.size() : all.indexOf('\n', at);
    const int equals = all.indexOf('=', at);
    if (equals < 0 || equals > lineEnd) {
      at = lineEnd + 1;
      continue;
    }
    const QString key = all.mid(at, equals - at).trimmed().toLower();
    int valueStart = equals + 1;
    while (valueStart < all.size() && all[valueStart] == ' ') ++valueStart;
    int valueEnd = lineEnd;
    if (valueStart < all.size() && all[valueStart] == '{') {
      const int close = all.indexOf('}', valueStart);
      valueEnd = close < 0 ? all.size() : close + 1;
    }
    fields.emplace_back(key.toStdString(),
                        all.mid(valueStart, valueEnd - valueStart).trimmed().toStdString());
    at = all.indexOf('\n', valueEnd) < 0 ? all.size() : all.indexOf('\n', valueEnd) + 1;
  }
  return fields;
}

SpectralMetadata readSpectralMetadata(GDALDataset& dataset, const std::string& path) {
  const int bands = dataset.GetRasterCount();
  SpectralMetadata found;
  found.wavelengths.assign(bands, std::nan(""));
  found.fwhm.assign(bands, std::nan(""));
  const auto take = [&](std::vector<double> wavelengths, std::vector<double> fwhm,
                        const std::string& source) {
    if (!complete(wavelengths, bands)) {
      const auto given = std::count_if(wavelengths.begin(), wavelengths.end(),
                                       [](double v) { return std::isfinite(v) && v > 0; });
      if (given > 0 && found.source.empty() && found.wavelengthProblem.empty())
        found.wavelengthProblem = static_cast<int>(wavelengths.size()) != bands
                                      ? source + " list " + std::to_string(wavelengths.size()) +
                                            " wavelengths for " + std::to_string(bands) + " bands"
                                      : source + " give " + std::to_string(given) + " of the " +
                                            std::to_string(bands) +
                                            " bands a wavelength (the others none, or one "
                                            "that is no positive number)";
      return;
    }
    if (found.source.empty()) {
      found.wavelengths = std::move(wavelengths);
      if (complete(fwhm, bands)) found.fwhm = std::move(fwhm);
      found.source = source;
      found.wavelengthProblem.clear();
      return;
    }
    // Widths from a later source of the same wavelengths (GDAL's ENVI driver gives each band its
    // wavelength but leaves the widths in the dataset's ENVI lists).
    if (complete(found.fwhm, bands) || !complete(fwhm, bands)) return;
    for (int b = 0; b < bands; ++b)
      if (std::abs(wavelengths[b] - found.wavelengths[b]) > 1e-6 * found.wavelengths[b]) return;
    found.fwhm = std::move(fwhm);
  };

  // Each band's own metadata.
  const char* bandUnits = firstBandItem(dataset, "wavelength_units");
  take(inNanometres(bandItems(dataset, "wavelength", nullptr), bandUnits ? bandUnits : ""),
       inNanometres(bandItems(dataset, "fwhm", nullptr), bandUnits ? bandUnits : ""),
       "the bands' metadata");
  take(inNanometres(bandItems(dataset, "CENTRAL_WAVELENGTH_UM", "IMAGERY"), "um"),
       inNanometres(bandItems(dataset, "FWHM_UM", "IMAGERY"), "um"), "the bands' IMAGERY metadata");
  const std::vector<double> bandFlags = bandItems(dataset, "bbl", nullptr);
  if (std::none_of(bandFlags.begin(), bandFlags.end(), [](double v) { return std::isnan(v); }))
    found.good = goodFlags(bandFlags, bands, found.goodProblem);

  // The dataset's ENVI lists.
  const char* units = dataset.GetMetadataItem("wavelength_units", "ENVI");
  const std::string datasetUnits = units ? units : (bandUnits ? bandUnits : "");
  const auto datasetList = [&](const char* key) {
    const char* text = dataset.GetMetadataItem(key, "ENVI");
    return text ? numberList(QString::fromUtf8(text)) : std::vector<double>();
  };
  take(inNanometres(datasetList("wavelength"), datasetUnits),
       inNanometres(datasetList("fwhm"), datasetUnits), "the ENVI metadata");
  if (found.good.empty()) found.good = goodFlags(datasetList("bbl"), bands, found.goodProblem);

  // An ENVI header beside the file.
  const QByteArray header = headerBeside(dataset, path);
  if (!header.isEmpty()) {
    std::string headerUnits;
    std::vector<double> wavelengths, fwhm, flags;
    for (const auto& [key, value] : parseEnviHeader(header)) {
      const QString text = QString::fromStdString(value);
      if (key == "wavelength units") headerUnits = value;
      if (key == "wavelength") wavelengths = numberList(text);
      if (key == "fwhm") fwhm = numberList(text);
      if (key == "bbl") flags = numberList(text);
    }
    take(inNanometres(wavelengths, headerUnits), inNanometres(fwhm, headerUnits),
         "the ENVI header beside it");
    if (found.good.empty()) found.good = goodFlags(flags, bands, found.goodProblem);
  }
  return found;
}

bool BandSpectra::empty() const {
  const auto known = [](double v) { return std::isfinite(v); };
  return good.empty() && std::none_of(wavelengths.begin(), wavelengths.end(), known) &&
         std::none_of(fwhm.begin(), fwhm.end(), known);
}

BandSpectra bandSpectraOf(const std::vector<double>& wavelengths, const std::vector<double>& fwhm,
                          const std::vector<bool>& good, const std::vector<int>& bands) {
  BandSpectra out;
  const auto at = [](const std::vector<double>& values, int band) {
    return static_cast<size_t>(band) <= values.size() ? values[band - 1] : std::nan("");
  };
  for (const int band : bands) {
    out.wavelengths.push_back(at(wavelengths, band));
    out.fwhm.push_back(at(fwhm, band));
  }
  if (!good.empty())
    for (const int band : bands)
      out.good.push_back(static_cast<size_t>(band) <= good.size() && good[band - 1]);
  return out;
}

namespace {

QString number(double value) {
  return QString::number(value, 'g', 10);
}

// "{400.5, 410.2}" when every band has a value, else empty.
QString enviList(const std::vector<double>& values) {
  QStringList items;
  for (const double v : values) {
    if (!std::isfinite(v)) return {};
    items << number(v);
  }
  return "{" + items.join(", ") + "}";
}

}  // namespace

void writeSpectralMetadata(GDALDataset& dataset, const BandSpectra& spectra) {
  const int bands = dataset.GetRasterCount();
  for (int b = 0; b < bands; ++b) {
    GDALRasterBand* band = dataset.GetRasterBand(b + 1);
    if (static_cast<size_t>(b) < spectra.wavelengths.size() &&
        std::isfinite(spectra.wavelengths[b])) {
      band->SetMetadataItem("wavelength", number(spectra.wavelengths[b]).toUtf8().constData());
      band->SetMetadataItem("wavelength_units", "Nanometers");
      band->SetMetadataItem("CENTRAL_WAVELENGTH_UM",
                            number(spectra.wavelengths[b] / 1000).toUtf8().constData(), "IMAGERY");
    }
    if (static_cast<size_t>(b) < spectra.fwhm.size() && std::isfinite(spectra.fwhm[b])) {
      band->SetMetadataItem("fwhm", number(spectra.fwhm[b]).toUtf8().constData());
      band->SetMetadataItem("FWHM_UM", number(spectra.fwhm[b] / 1000).toUtf8().constData(),
                            "IMAGERY");
    }
    if (static_cast<size_t>(b) < spectra.good.size())
      band->SetMetadataItem("bbl", spectra.good[b] ? "1" : "0");
  }
  GDALDriver* driver = dataset.GetDriver();
  if (!driver || !EQUAL(driver->GetDescription(), "ENVI")) return;
  const QString wavelengths = enviList(spectra.wavelengths);
  if (!wavelengths.isEmpty()) {
    dataset.SetMetadataItem("wavelength", wavelengths.toUtf8().constData(), "ENVI");
    dataset.SetMetadataItem("wavelength_units", "Nanometers", "ENVI");
  }
  const QString fwhm = enviList(spectra.fwhm);
  if (!fwhm.isEmpty()) dataset.SetMetadataItem("fwhm", fwhm.toUtf8().constData(), "ENVI");
  if (static_cast<int>(spectra.good.size()) == bands) {
    std::vector<double> flags;
    for (const bool g : spectra.good) flags.push_back(g ? 1 : 0);
    dataset.SetMetadataItem("bbl", enviList(flags).toUtf8().constData(), "ENVI");
  }
}

}  // namespace hyperstream
