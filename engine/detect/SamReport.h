#pragma once
// The HTML report of a spectral angle mapper run: what was compared with what, the classes'
// pixel counts and mean angles beside their colours, the class map, the best angles' histogram
// and the library's spectra on the image's bands. Inline SVG and PNG only.

#include "detect/SamJob.h"
#include "io/QuickLook.h"

#include <QString>

namespace hyperstream {

QString samReport(const SamResult& result, const SamOptions& options, const QuickLook& classMap);
// A preview of the (not yet committed) class map, then the page written atomically; throws
// Error("OUTPUT_HTML_FILE") on failure.
void writeSamReport(const SamResult& result, const SamOptions& options, GDALDataset& classes);

}  // namespace hyperstream
