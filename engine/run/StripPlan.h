#pragma once
// The strip planner every job uses: how tall its strips are, whether the cube stays in memory
// between passes, and what the reader may keep of the file, all within the RAM budget.

#include "io/DecompressedCopy.h"
#include "io/Raster.h"
#include "run/Pipeline.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hyperstream {

// What a job's strips hold per row, and the rows it covers.
struct StripNeeds {
  int64_t firstRow = 0;
  int64_t rowsToDo = 0;           // the rows this worker reads (its share of the image)
  int bands = 0;                  // selected
  int64_t streamingRowBytes = 0;  // per buffered row when the file is read in every pass
  int64_t residentRowBytes = 0;   // per buffered row when the cube stays in memory
  int64_t haloRows = 0;           // rows read above and below each strip (SPP's window)
  int64_t rowMultiple = 1;        // strips hold whole multiples of this many rows
  int64_t leastStrips = 1;        // so that computing one strip overlaps writing another
  int64_t requestedRows = 0;      // the user's strip height (tests), 0 to plan
  int sharing = 1;                // workers in this process, sharing its cores to read
  bool mayCopyInput = true;       // false for workers sharing an image: they read its rows
};

struct StripPlan {
  int64_t inputRowBytes = 0;  // a row of the selected bands in the file's type
  int64_t rowsToDo = 0;
  int64_t stripRows = 0;
  int64_t bufferedRows = 0;     // a strip and its halo rows
  bool cubeFits = false;        // the worker's rows and a pass's other buffers fit the budget
  int readers = 1;              // threads reading each strip
  int64_t budget = 0;           // for strip buffers and the cube
  int64_t mappedPerReader = 0;  // kept for each reader's map of an uncompressed GeoTIFF
  int64_t decoderBytes = 0;     // kept for decompressing a compressed file's blocks once
  bool blocksTooLarge = false;  // a row of them takes more than half of the budget
  std::string note;             // what the log should say about the plan, if anything
  std::vector<StripRange> strips;

  int64_t cubeBytes() const { return inputRowBytes * rowsToDo; }
  // What the reader may map of the file: its own share, and what `bufferBytes` leave of the
  // budget.
  int64_t mappableBytes(int64_t bufferBytes) const;
};

// Throws Error("RAM_MB") when the budget cannot hold one strip.
StripPlan planMemory(const RasterInfo& input, int64_t ramBytes, const StripNeeds& needs);

// Where a job would read a compressed input in every pass (its cube does not stay in memory) and
// a row of its blocks is too large for the budget, a copy decompressed once beside `output` when
// its disk has room, with `plan` made again for reading the copy as a plain file; null otherwise,
// and the plan's note goes to the log. (With blocks that fit, decompressing in each pass was
// faster here than writing and reading the copy: 2.09 GB DEFLATE, 2 cores.)
std::unique_ptr<DecompressedCopy> decompressIfStreamed(const RasterInfo& input,
                                                       const std::vector<int>& bands,
                                                       int64_t ramBytes, const StripNeeds& needs,
                                                       const std::string& output, StripPlan& plan,
                                                       Feedback& feedback);

}  // namespace hyperstream
