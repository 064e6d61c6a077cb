#pragma once
// The HTML report of a PCA or MNF run: log scree plot with the cumulative share, a quick look of
// the first components as red, green and blue, eigenvalue table, loadings of the first components
// against band or wavelength, pixel counts, constant bands, device and timings. Inline SVG only: no
// network, no JavaScript; QGIS's Results Viewer and any browser show it.

#include "io/QuickLook.h"
#include "pca/PcaJob.h"

#include <QString>

#include <string>

namespace hyperstream {

// What the report shows of the images: the written components' preview; for a denoise, which
// writes none, the input and the denoised image in natural colour and what was removed (the RMS
// of their differences over `residualBands` bands spread over the spectrum).
struct ReportViews {
  bool rebuilt = false;  // the output is the image rebuilt from the components (denoise, inverse)
  QuickLook components, before, after, residual;
  int residualBands = 0;
};

QString htmlReport(const CovarianceResult& result, const PcaOptions& options,
                   const ReportViews& views = {});
// Writes atomically; throws Error("OUTPUT_HTML_FILE") on failure.
void writeHtmlReport(const CovarianceResult& result, const PcaOptions& options,
                     const std::string& path, const ReportViews& views = {});

}  // namespace hyperstream
