#pragma once
// The HTML report of an abundance run: what was unmixed and how, a map of each endmember's
// abundance, the RMSE map when written, the endmember spectra, device and time. Inline SVG and
// PNG only.

#include "io/QuickLook.h"
#include "unmixing/AbundanceJob.h"

#include <QString>

#include <string>
#include <vector>

namespace hyperstream {

// `maps`: one preview per endmember, then the RMSE's when written.
QString abundanceReport(const AbundanceResult& result, const AbundanceOptions& options,
                        const std::vector<QuickLook>& maps);
// Previews of the (not yet committed) outputs, then writes atomically; throws
// Error("OUTPUT_HTML_FILE") on failure.
void writeAbundanceReport(const AbundanceResult& result, const AbundanceOptions& options,
                          GDALDataset& abundances, GDALDataset* rmse);

}  // namespace hyperstream
