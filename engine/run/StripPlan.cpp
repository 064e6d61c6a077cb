#include "run/StripPlan.h"

#include "core/Error.h"
#include "io/BlockDecoder.h"

#include <QThread>

#include <algorithm>

namespace hyperstream {

namespace {

// Bytes of the RAM budget kept aside for everything but strip buffers (BLAS blocks, GDAL,
// bookkeeping): a quarter, at most 64 MiB.
int64_t reserveBytes(int64_t ramBytes) {
  return std::min<int64_t>(64ll << 20, ramBytes / 4);
}

// Strips no larger than this: larger ones gain no speed and make cancel slower; smaller ones made
// the GeoTIFF writer, which scatters each strip over every band, twice as slow.
constexpr int64_t kMaxStripBytes = 64ll << 20;

int64_t mib(int64_t bytes) {
  return (bytes >> 20) + 1;
}

// `rows` capped so that a strip stays below kMaxStripBytes and the rows to do, rounded down to a
// multiple of the file's block height when that is possible (a compressed file's decoder reads
// whole blocks whatever the strips).
int64_t rowsFitting(int64_t rows, const StripPlan& plan, const RasterInfo& input) {
  rows = std::min({rows, kMaxStripBytes / std::max<int64_t>(1, plan.inputRowBytes), plan.rowsToDo});
  if (!input.compressed && rows < plan.rowsToDo && rows >= input.blockHeight &&
      input.blockHeight > 1)
    rows -= rows % input.blockHeight;
  return rows;
}

// An eighth of the budget (at most 128 MiB per reader) is kept for the reader's map of an
// uncompressed file; a compressed file's decoder keeps a row of blocks instead. When that row
// takes more than half of what the budget leaves, the strips keep their half and the log says so.
void setReaderShare(StripPlan& plan, const RasterInfo& input, int64_t ramBytes,
                    const StripNeeds& needs) {
  const int64_t available = ramBytes - reserveBytes(ramBytes);
  if (input.compressed) {
    plan.decoderBytes =
        BlockDecoder::memoryBytes(input, needs.bands, plan.readers, 2 * needs.haloRows);
    plan.budget = std::max(available / 2, available - plan.decoderBytes);
    plan.blocksTooLarge = plan.decoderBytes > available / 2;
    if (plan.blocksTooLarge)
      plan.note = "decompressing each of the input's " + std::to_string(input.blockWidth) + " x " +
                  std::to_string(input.blockHeight) + " blocks once takes " +
                  std::to_string(mib(plan.decoderBytes)) +
                  " MiB, more than half of the RAM budget: its blocks are too large for it "
                  "(rewrite the file with shorter blocks, e.g. gdal_translate -co "
                  "BLOCKYSIZE=16, or raise the budget)";
    return;
  }
  plan.mappedPerReader = std::min<int64_t>(128ll << 20, ramBytes / 8 / plan.readers);
  plan.budget = available - plan.readers * plan.mappedPerReader;
}

// With a tight budget (a small RAM_MB, or one GPU's share of it when several run) strips of the
// planned height can leave the reader too little to map the file, and GDAL's block cache reads
// several times slower (StripReader). Then take the tallest strips, half as tall as planned, a row
// per reader and a block at least, that leave it room for three strips: reopening, which unmaps,
// then comes every other strip or so. Files that cannot be mapped keep their strips, and so do
// band-interleaved files that would need far shorter ones (their map holds a 2 MiB folio per
// band whatever the strip's height).
void leaveRoomForTheMapping(StripPlan& plan, const RasterInfo& input, const StripNeeds& needs) {
  auto mappingRoom = [&](int64_t rows) {
    return plan.readers * plan.mappedPerReader + plan.budget - rows * needs.streamingRowBytes;
  };
  auto mappingNeeded = [&](int64_t rows) {
    return StripReader::mappingNeeded(rows, plan.inputRowBytes, needs.bands, input.bandInterleaved,
                                      plan.readers);
  };
  if (!input.mappable || mappingRoom(plan.stripRows) >= mappingNeeded(plan.stripRows)) return;
  auto roomy = [&](int64_t r) {
    return mappingRoom(r) >= mappingNeeded(r) + 2 * r * plan.inputRowBytes;
  };
  int64_t rows = plan.stripRows;
  const int64_t fewest =
      std::max<int64_t>({plan.readers, input.blockHeight, (plan.stripRows + 1) / 2});
  while (rows > fewest && !roomy(rows)) --rows;
  if (roomy(rows)) plan.stripRows = rowsFitting(rows, plan, input);
}

void planStripRows(StripPlan& plan, const RasterInfo& input, const StripNeeds& needs) {
  // A strip comes with the halo rows the image has around it: a whole image of few rows has none.
  const int64_t haloRows = std::min<int64_t>(2 * needs.haloRows, input.height - 1);
  const int64_t fitting = plan.budget / needs.streamingRowBytes;
  int64_t rows =
      rowsFitting(fitting >= plan.rowsToDo ? plan.rowsToDo : fitting - haloRows, plan, input);
  rows = std::min(
      rows, std::max<int64_t>(1, (plan.rowsToDo + needs.leastStrips - 1) / needs.leastStrips));
  if (rows < 1)
    throw Error("RAM_MB",
                "the RAM budget is too small for one strip of image rows" +
                    (haloRows > 0 ? " and its " + std::to_string(haloRows) + " halo rows" : "") +
                    " (" + std::to_string(mib(needs.streamingRowBytes * (1 + haloRows))) +
                    " MiB needed)");
  plan.stripRows = rows;
  leaveRoomForTheMapping(plan, input, needs);
  // The cube stays in memory when it fits beside a pass's other buffers for strips of that height.
  plan.cubeFits = plan.cubeBytes() +
                      std::min(plan.stripRows + haloRows, input.height) * needs.residentRowBytes <=
                  plan.budget;
  if (needs.requestedRows > 0) plan.stripRows = std::min(needs.requestedRows, plan.rowsToDo);
  if (plan.stripRows < plan.rowsToDo && needs.rowMultiple > 1)
    plan.stripRows =
        std::max(needs.rowMultiple, plan.stripRows - plan.stripRows % needs.rowMultiple);
  plan.bufferedRows = std::min(plan.stripRows + 2 * needs.haloRows, input.height);
}

}  // namespace

int64_t StripPlan::mappableBytes(int64_t bufferBytes) const {
  return readers * mappedPerReader + std::max<int64_t>(0, budget - bufferBytes);
}

StripPlan planMemory(const RasterInfo& input, int64_t ramBytes, const StripNeeds& needs) {
  StripPlan plan;
  plan.inputRowBytes = input.width * needs.bands * typeSize(input.type);
  plan.rowsToDo = needs.rowsToDo;
  plan.readers = std::max(1, QThread::idealThreadCount() / std::max(1, needs.sharing));
  setReaderShare(plan, input, ramBytes, needs);
  planStripRows(plan, input, needs);
  plan.strips = planStrips(plan.rowsToDo, plan.stripRows, needs.firstRow);
  return plan;
}

namespace {

std::unique_ptr<DecompressedCopy> copyWhereRoom(const RasterInfo& input,
                                                const std::vector<int>& bands, int64_t ramBytes,
                                                const StripPlan& plan, const std::string& output,
                                                Feedback& feedback) {
  const QString size = QString::number(mib(plan.cubeBytes()));
  if (!DecompressedCopy::fits(output, plan.cubeBytes())) {
    feedback.info(QString("no room beside the output for a decompressed copy of the input (%1 "
                          "MiB): its blocks are decompressed again in each pass")
                      .arg(size));
    return nullptr;
  }
  feedback.info(QString("the input is compressed, does not fit the RAM budget, and its blocks are "
                        "too large to decompress in each pass within it: decompressing it once "
                        "into a temporary copy beside the output (%1 MiB, removed at the end), "
                        "read in each pass")
                    .arg(size));
  // As many threads as the budget holds blocks for (each holds its block three times: its own
  // buffer, GDAL's cache and GDAL's decompression buffer); one where even that is too much, said.
  const int64_t decoding = DecompressedCopy::decodingBytes(input, static_cast<int>(bands.size()));
  const int64_t available = ramBytes - reserveBytes(ramBytes);
  const int threads = static_cast<int>(std::clamp<int64_t>(available / decoding, 1, plan.readers));
  if (decoding > available)
    feedback.warning(
        QString("the input's %1 x %2 %3 blocks of %4 band(s) take %5 MiB each decompressed, and "
                "GDAL holds about three copies of the one it decompresses: %6 MiB, more than the "
                "RAM budget leaves for it (%7 MiB); rewrite the file with smaller blocks (e.g. "
                "gdal_translate -co TILED=YES -co BLOCKXSIZE=256 -co BLOCKYSIZE=256%8) or raise "
                "the budget")
            .arg(input.blockWidth)
            .arg(input.blockHeight)
            .arg(input.bandInterleaved ? "band-interleaved" : "pixel-interleaved")
            .arg(input.bandInterleaved ? 1 : static_cast<int>(bands.size()))
            .arg(mib(decoding / 3))
            .arg(mib(decoding))
            .arg(mib(available))
            .arg(input.bandInterleaved ? "" : " -co INTERLEAVE=BAND"));
  return std::make_unique<DecompressedCopy>(input, bands, output, threads, feedback);
}

}  // namespace

std::unique_ptr<DecompressedCopy> decompressIfStreamed(const RasterInfo& input,
                                                       const std::vector<int>& bands,
                                                       int64_t ramBytes, const StripNeeds& needs,
                                                       const std::string& output, StripPlan& plan,
                                                       Feedback& feedback) {
  std::unique_ptr<DecompressedCopy> copy;
  if (input.compressed && !plan.cubeFits && plan.blocksTooLarge && needs.mayCopyInput)
    copy = copyWhereRoom(input, bands, ramBytes, plan, output, feedback);
  if (copy)
    plan = planMemory(copy->info(), ramBytes, needs);
  else if (!plan.note.empty())
    feedback.warning(QString::fromStdString(plan.note));
  return copy;
}

}  // namespace hyperstream
