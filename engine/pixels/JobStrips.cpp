#include "pixels/JobStrips.h"

namespace hyperstream {

StreamedInput streamOnePass(const RasterInfo& input, const std::vector<int>& bands,
                            const OnePassShape& shape, int64_t ramBytes, const std::string& output,
                            Feedback& feedback) {
  StreamedInput streamed;
  const int64_t inputRowBytes =
      input.width * static_cast<int64_t>(bands.size()) * typeSize(input.type);
  StripNeeds needs;
  needs.firstRow = shape.firstRow;
  needs.rowsToDo = shape.rows;
  needs.sharing = shape.sharing;
  needs.mayCopyInput = shape.sharing == 1;  // workers sharing the image read their rows of it
  needs.bands = static_cast<int>(bands.size());
  needs.residentRowBytes = shape.outputBuffers * shape.outputRowBytes;
  needs.streamingRowBytes = shape.inputBuffers * inputRowBytes + needs.residentRowBytes;
  streamed.groupRows = groupRows(input.width);
  needs.rowMultiple = streamed.groupRows;
  needs.leastStrips = 4;  // so that computing one strip overlaps writing another
  needs.requestedRows = shape.requestedRows;
  streamed.plan = planMemory(input, ramBytes, needs);
  streamed.copy =
      decompressIfStreamed(input, bands, ramBytes, needs, output, streamed.plan, feedback);
  streamed.reader = std::make_unique<StripReader>(
      streamed.source(input), streamed.copy ? streamed.copy->bands() : bands, streamed.plan.readers,
      streamed.plan.mappableBytes(streamed.plan.stripRows * needs.streamingRowBytes), 0);
  return streamed;
}

}  // namespace hyperstream
