#pragma once
// The endmembers' CSV: a header `id,row,col,` then one column per band (named by the band's
// description, else its wavelength, else its number), and one row per endmember: its id, its
// pixel (0-based row and column) and its spectrum in the image's units. The endmembers job writes
// it; the abundances job reads it.

#include "io/Raster.h"

#include <QByteArray>

#include <cstdint>
#include <string>
#include <vector>

namespace hyperstream {

struct Endmember {
  std::string id;
  int64_t row = 0, col = 0;      // -1: the spectrum is no pixel of the image (a table read)
  std::vector<double> spectrum;  // per selected band
  int pixelsAveraged = 1;
};

struct EndmemberTable {
  std::vector<std::string> bandNames;
  std::vector<Endmember> endmembers;
};

// The column names of the selected bands (1-based) of `info`.
std::vector<std::string> bandColumnNames(const RasterInfo& info, const std::vector<int>& bands);

QByteArray endmembersCsv(const EndmemberTable& table);
// Reads what endmembersCsv writes, and the same without the row and col columns (or with them
// empty or -1), the first column named id or name; throws Error(parameter) naming the line that
// is not.
EndmemberTable readEndmembersCsv(const std::string& path, const std::string& parameter);
// The same from the file's contents (`path` only names it in errors).
EndmemberTable parseEndmembersCsv(const QByteArray& text, const std::string& path,
                                  const std::string& parameter);

}  // namespace hyperstream
