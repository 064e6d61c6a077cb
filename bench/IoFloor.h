#pragma once
// The I/O floor of a run: read every strip of `input` with the engine's own path (band-major from
// an uncompressed band-interleaved file, as the CPU PCA kernels take it; else pixel-interleaved;
// file type, strips of 64 MiB) and write an output of `components` bands of `outputType` (0
// components: as many as the input has, as SPP and denoise write; GDT_Unknown: the input's type,
// as denoise writes) of the same size with the engine's write path, doing no arithmetic. passes = 2
// reads the input twice, as a streamed PCA whose cube does not fit its RAM budget does.

#include "io/PendingRaster.h"
#include "io/Raster.h"
#include "run/Pipeline.h"

#include <QElapsedTimer>
#include <QThread>

#include <algorithm>
#include <string>
#include <vector>

namespace hyperstream::bench {

struct IoFloorTimes {
  double read = 0, write = 0, total = 0;
  double gigabytesRead = 0;
};

inline IoFloorTimes ioFloor(const std::string& input, const std::string& output, int components,
                            int passes, GDALDataType outputType = GDT_Float32) {
  IoFloorTimes times;
  QElapsedTimer total;
  total.start();
  DatasetPtr dataset = openRaster(input, "INPUT");
  const RasterInfo info = describeRaster(*dataset, input);
  if (components <= 0) components = info.bandCount;
  if (outputType == GDT_Unknown) outputType = info.type;
  std::vector<int> bands;
  for (int b = 1; b <= info.bandCount; ++b) bands.push_back(b);
  const int64_t rowBytes = info.width * info.bandCount * typeSize(info.type);
  const int64_t stripRows =
      std::clamp<int64_t>((64ll << 20) / rowBytes, 1, info.height);  // as the engine
  const std::vector<StripRange> strips = planStrips(info.height, stripRows);
  std::vector<unsigned char> in(static_cast<size_t>(stripRows * rowBytes));
  // Values, not zeros: GDAL's GeoTIFF driver skips writing all-zero blocks of a new file (and
  // fills them in at closing by extending the file), which a real output never gets.
  const auto values = static_cast<GPtrDiff_t>(stripRows * info.width * components);
  std::vector<unsigned char> out(static_cast<size_t>(values) * typeSize(outputType));
  const double one = 1.0;  // a source stride of 0 repeats it
  GDALCopyWords64(&one, GDT_Float64, 0, out.data(), outputType, typeSize(outputType), values);
  const int readers = std::max(1, QThread::idealThreadCount());
  StripReader reader(info, bands, readers, 1ll << 30, 0);
  const bool bandMajor = info.bandInterleaved && !info.compressed;
  QElapsedTimer timer;
  auto read = [&](const StripRange& strip) {
    timer.start();
    if (bandMajor)
      reader.readBandMajor(strip.row0, strip.rows, in.data());
    else
      reader.read(strip.row0, strip.rows, in.data());
    times.read += timer.nsecsElapsed() * 1e-9;
  };
  for (int pass = 1; pass < passes; ++pass)
    for (const StripRange& strip : strips) read(strip);
  PendingRaster raster(output, RasterFormat{outputDriver(output, ""), {}}, info.width, info.height,
                       components, outputType);
  const SilentFeedback quiet;
  for (const StripRange& strip : strips) {
    read(strip);
    timer.start();
    raster.write(strip.row0, strip.rows, out.data(), quiet);
    times.write += timer.nsecsElapsed() * 1e-9;
  }
  timer.start();
  raster.commit();
  times.write += timer.nsecsElapsed() * 1e-9;
  times.gigabytesRead = passes * static_cast<double>(rowBytes) * info.height / 1e9;
  times.total = total.nsecsElapsed() * 1e-9;
  return times;
}

}  // namespace hyperstream::bench
