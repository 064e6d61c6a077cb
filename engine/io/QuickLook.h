#pragma once
// Small previews of rasters for the HTML reports, as PNG images inlined in the page: one band as
// grey or three as red, green and blue, read decimated through GDAL (nearest pixel) so a preview
// of a cube of any size reads only the rows it shows. Invalid pixels (nodata, NaN) are transparent.

#include <gdal_priv.h>

#include <QString>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace hyperstream {

struct QuickLook {
  int width = 0, height = 0;  // pixels of the preview
  QString dataUrl;            // data:image/png;base64,...; empty when it could not be made
  // The size it is shown at: small previews are enlarged by a whole factor.
  int zoom() const { return std::max(1, 240 / std::max({width, height, 1})); }
  // <img> of it with `alt`, or an empty string.
  QString img(const QString& alt) const;
};

// Three of the selected bands (1-based) for a natural-colour preview: those nearest 650, 550 and
// 460 nm when every selected band has a wavelength (in nm or micrometres), else the bands 30 %,
// 20 % and 10 % of the way along the selection (red, green and blue on a 400-2500 nm sensor).
std::vector<int> naturalColourBands(const std::vector<int>& selected,
                                    const std::vector<double>& wavelengths);

// `bands` (1-based): one (grey) or three (red, green, blue); at most `longSide` pixels along the
// longer side. Each band is stretched linearly between its 2nd and 98th percentiles of the valid
// pixels, or over `range` when given (e.g. 0-1 for abundances).
QuickLook makeQuickLook(GDALDataset& dataset, const std::vector<int>& bands, int longSide = 320,
                        std::optional<std::pair<double, double>> range = std::nullopt);

// A class map's band 1 in the colours of its colour table (classes without one in grey), its
// nodata transparent; at most `longSide` pixels along the longer side (nearest pixel).
QuickLook makeClassQuickLook(GDALDataset& dataset, int longSide = 320);

// The root mean square of the differences of `aBands` of `a` and `bBands` of `b` (1-based, pairs
// in order; two rasters of one grid) per preview pixel, in grey between its 2nd and 98th
// percentiles; transparent where either is invalid.
QuickLook makeDifferenceQuickLook(GDALDataset& a, const std::vector<int>& aBands, GDALDataset& b,
                                  const std::vector<int>& bBands, int longSide = 320);

}  // namespace hyperstream
