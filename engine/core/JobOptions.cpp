#include "core/JobOptions.h"

#include "core/Error.h"

#include <QString>
#include <QStringList>

namespace hyperstream {

std::string outputTypeName(OutputType type) {
  // In OutputType's order.
  static const char* const kNames[] = {"Float32", "Float64", "Byte",  "UInt16",
                                       "Int16",   "UInt32",  "Int32", "Input"};
  return kNames[static_cast<int>(type)];
}

BandList parseBandList(const std::string& text, const std::string& parameter) {
  BandList bands;
  for (const QString& part : QString::fromStdString(text).split(',', Qt::SkipEmptyParts)) {
    const QStringList range = part.trimmed().split('-');
    bool okFirst = false, okLast = false;
    const int first = range.value(0).toInt(&okFirst);
    const int last = range.size() == 2 ? range[1].toInt(&okLast) : first;
    if (!okFirst || (range.size() == 2 && !okLast) || range.size() > 2 || last < first)
      throw Error(parameter, "'" + part.trimmed().toStdString() +
                                 "' is not a band number or a range like 5-9");
    if (first < 1) throw Error(parameter, "band numbers start at 1, not " + std::to_string(first));
    bands.emplace_back(first, last);
  }
  if (bands.empty()) throw Error(parameter, "no band given");
  return bands;
}

std::vector<std::pair<double, double>> parseNanometreRanges(const std::string& text) {
  std::vector<std::pair<double, double>> ranges;
  for (const QString& part : QString::fromStdString(text).split(',', Qt::SkipEmptyParts)) {
    const QStringList ends = part.trimmed().split('-');
    bool okLo = false, okHi = false;
    const double lo = ends.value(0).toDouble(&okLo);
    const double hi = ends.size() == 2 ? ends[1].toDouble(&okHi) : 0;
    if (ends.size() != 2 || !okLo || !okHi || hi < lo || lo < 0)
      throw Error("EXCLUDE_NM", "'" + part.trimmed().toStdString() +
                                    "' is not a wavelength range in nanometres like 1340-1450");
    ranges.emplace_back(lo, hi);
  }
  if (ranges.empty()) throw Error("EXCLUDE_NM", "no wavelength range given");
  return ranges;
}

}  // namespace hyperstream
