#pragma once
// The HTML report of an abundance run: what was unmixed and how, a map of each endmember's
// abundance, the RMSE map when written, the endmember spectra, device and time. Inline SVG and
// PNG only.

#include "io/QuickLook.h"
#include "unmixing/AbundanceJob.h"

#include <QString>

#include <optional>

#include <string>
#include <vector>

namespace hyperstream {

// The RMSE map's mean and largest value over its valid pixels.
struct RmseSummary {
  double mean = 0, maximum = 0;
};

// `maps`: one preview per endmember, then the RMSE's when written (and `rmse` its summary).
QString abundanceReport(const AbundanceResult& result, const AbundanceOptions& options,
                        const std::vector<QuickLook>& maps,
                        const std::optional<RmseSummary>& rmse = std::nullopt);
// Previews of the (not yet committed) outputs, then writes atomically; throws
// Error("OUTPUT_HTML_FILE") on failure.
void writeAbundanceReport(const AbundanceResult& result, const AbundanceOptions& options,
                          GDALDataset& abundances, GDALDataset* rmse);

}  // namespace hyperstream
