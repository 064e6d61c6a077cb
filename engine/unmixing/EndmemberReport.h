#pragma once
// The HTML report of an endmember extraction: what was searched and how, the endmembers' pixels,
// their spectra against wavelength (or band), device and time. Inline SVG only.

#include "unmixing/EndmemberJob.h"

#include <QString>

#include <string>

namespace hyperstream {

QString endmemberReport(const EndmemberResult& result, const EndmemberOptions& options);
// Writes atomically; throws Error("OUTPUT_HTML_FILE") on failure.
void writeEndmemberReport(const EndmemberResult& result, const EndmemberOptions& options,
                          const std::string& path);

}  // namespace hyperstream
