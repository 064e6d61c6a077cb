#pragma once
// The HTML report of an endmember extraction: what was searched and how, the endmembers' pixels,
// their spectra against wavelength (or band), device and time. Inline SVG only.

#include "io/QuickLook.h"
#include "unmixing/EndmemberJob.h"

#include <QString>

#include <string>
#include <vector>

namespace hyperstream {

// The spectra against wavelength where every selected band has one, else against band number,
// broken where bands were left out; a legend of the ids.
QString endmemberSpectraPlot(const std::vector<Endmember>& endmembers,
                             const std::vector<int>& bands, const RasterInfo& input);
// How the count of endmembers was read (materials/MaterialCount.h): the count and why, the
// reconstruction curve with the count marked, HySime's and HFC's estimates beside it.
QString materialCountSection(const MaterialCount& count, const SignalSubspace& subspace);
// `image`: a preview of the input (naturalColourBands), where the endmembers are marked.
QString endmemberReport(const EndmemberResult& result, const EndmemberOptions& options,
                        const QuickLook& image = {});
// Writes atomically; throws Error("OUTPUT_HTML_FILE") on failure.
void writeEndmemberReport(const EndmemberResult& result, const EndmemberOptions& options,
                          const std::string& path);

}  // namespace hyperstream
