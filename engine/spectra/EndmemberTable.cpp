#include "spectra/EndmemberTable.h"

#include "core/Error.h"
#include "io/InputFiles.h"

#include <QString>
#include <QStringList>

#include <cmath>

namespace hyperstream {

namespace {

// A CSV field: quoted when it holds a comma, a quote or a line break.
QByteArray field(const std::string& text) {
  QByteArray quoted = QByteArray::fromStdString(text);
  if (!quoted.contains(',') && !quoted.contains('"') && !quoted.contains('\n')) return quoted;
  quoted.replace("\"", "\"\"");
  return "\"" + quoted + "\"";
}

// One CSV line's fields (quotes as `field` writes them).
QStringList splitLine(const QString& line) {
  QStringList fields;
  QString current;
  bool quoted = false;
  for (int i = 0; i < line.size(); ++i) {
    const QChar c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        current += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        current += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields << current;
      current.clear();
    } else {
      current += c;
    }
  }
  fields << current;
  return fields;
}

double number(const QString& text, const std::string& where, const std::string& parameter) {
  bool ok = false;
  const double value = text.trimmed().toDouble(&ok);
  if (!ok || !std::isfinite(value))
    throw Error(parameter, where + ": '" + text.toStdString() + "' is not a finite number");
  return value;
}

// A row or column: a whole number from 0 on (GDAL's rasters have fewer than 2^31), or -1 (or
// empty) for a spectrum that is no pixel of the image.
int64_t pixelPosition(const QString& text, const std::string& where, const std::string& parameter) {
  if (text.trimmed().isEmpty()) return -1;
  const double value = number(text, where, parameter);
  if (value == -1) return -1;
  if (value < 0 || value >= 2147483648.0 || value != std::floor(value))
    throw Error(parameter,
                where + ": '" + text.toStdString() +
                    "' is not a row or column number (a whole number from 0, or -1 for none)");
  return static_cast<int64_t>(value);
}

}  // namespace

std::vector<std::string> bandColumnNames(const RasterInfo& info, const std::vector<int>& bands) {
  std::vector<std::string> names;
  for (const int band : bands) {
    const std::string& description = info.bandDescriptions[band - 1];
    const double wavelength = info.wavelengths[band - 1];
    if (!description.empty())
      names.push_back(description);
    else if (!std::isnan(wavelength))
      names.push_back(QString::number(wavelength, 'g', 10).toStdString() +
                      (info.wavelengthUnits.empty() ? "" : " " + info.wavelengthUnits));
    else
      names.push_back("band " + std::to_string(band));
  }
  return names;
}

QByteArray endmembersCsv(const EndmemberTable& table) {
  QByteArray csv = "id,row,col";
  for (const std::string& name : table.bandNames) csv += "," + field(name);
  csv += "\n";
  for (const Endmember& e : table.endmembers) {
    csv += field(e.id) + "," + QByteArray::number(static_cast<qlonglong>(e.row)) + "," +
           QByteArray::number(static_cast<qlonglong>(e.col));
    // 17 digits: the float64 values read back exactly.
    for (const double v : e.spectrum) csv += "," + QByteArray::number(v, 'g', 17);
    csv += "\n";
  }
  return csv;
}

EndmemberTable readEndmembersCsv(const std::string& path, const std::string& parameter) {
  return parseEndmembersCsv(readInputFile(path, parameter, kLargestTextInput), path, parameter);
}

EndmemberTable parseEndmembersCsv(const QByteArray& text, const std::string& path,
                                  const std::string& parameter) {
  const QStringList lines = QString::fromUtf8(text).remove('\r').split('\n', Qt::SkipEmptyParts);
  const QStringList header = lines.isEmpty() ? QStringList() : splitLine(lines[0].trimmed());
  const QString first = header.isEmpty() ? QString() : header[0].trimmed().toLower();
  const bool positions = header.size() >= 3 && header[1].trimmed().toLower() == "row" &&
                         header[2].trimmed().toLower() == "col";
  const int firstBand = positions ? 3 : 1;
  if ((first != "id" && first != "name") || header.size() <= firstBand)
    throw Error(parameter,
                "'" + path +
                    "' is not a table of spectra: its first line must be 'id,row,col,' then the "
                    "band names (as `hyperstream endmembers` writes; row and col may be left "
                    "out, or empty where a spectrum is no pixel of the image), or a wavelength "
                    "column then one column per spectrum ('wavelength_nm,soil,water,...')");
  EndmemberTable table;
  for (int c = firstBand; c < header.size(); ++c)
    table.bandNames.push_back(header[c].trimmed().toStdString());
  for (int l = 1; l < lines.size(); ++l) {
    const QStringList fields = splitLine(lines[l].trimmed());
    const std::string where = "'" + path + "' line " + std::to_string(l + 1);
    if (fields.size() != header.size())
      throw Error(parameter, where + " has " + std::to_string(fields.size()) + " fields, the " +
                                 "header " + std::to_string(header.size()));
    Endmember e;
    e.id = fields[0].toStdString();
    e.row = positions ? pixelPosition(fields[1], where + " (row)", parameter) : -1;
    e.col = positions ? pixelPosition(fields[2], where + " (col)", parameter) : -1;
    for (int c = firstBand; c < fields.size(); ++c)
      e.spectrum.push_back(number(fields[c], where, parameter));
    table.endmembers.push_back(std::move(e));
  }
  if (table.endmembers.empty()) throw Error(parameter, "'" + path + "' lists no endmember");
  return table;
}

}  // namespace hyperstream
