#pragma once
// The HTML report of a PCA run: scree plot with the cumulative-variance curve, eigenvalue table,
// loadings of the first components against band or wavelength, pixel counts, constant bands,
// device and timings. Inline SVG only: no network, no JavaScript; QGIS's Results Viewer and any
// browser show it.

#include "pca/PcaJob.h"

#include <QString>

#include <string>

namespace hyperstream {

QString htmlReport(const PcaResult& result, const PcaOptions& options);
// Writes atomically; throws Error("OUTPUT_HTML_FILE") on failure.
void writeHtmlReport(const PcaResult& result, const PcaOptions& options, const std::string& path);

}  // namespace hyperstream
