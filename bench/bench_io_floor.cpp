// The I/O floor of a PCA run: read every strip of INPUT with the engine's own GDAL path
// (pixel-interleaved, file type, same strip heights) and write an output of COMPONENTS Float32
// bands of the same size with the engine's write path, doing no arithmetic.
//   bench_io_floor INPUT OUTPUT COMPONENTS [PASSES]
// PASSES=2 reads the input twice, as a streamed run whose cube does not fit its RAM budget does.

#include "PendingRaster.h"
#include "Pipeline.h"
#include "Raster.h"

#include <QElapsedTimer>
#include <QThread>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace hyperstream;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: bench_io_floor INPUT OUTPUT COMPONENTS [PASSES]\n");
    return 2;
  }
  const std::string input = argv[1], output = argv[2];
  const int components = std::atoi(argv[3]);
  const int passes = argc > 4 ? std::atoi(argv[4]) : 1;
  QElapsedTimer total;
  total.start();
  DatasetPtr dataset = openRaster(input, "INPUT");
  const RasterInfo info = describeRaster(*dataset, input);
  std::vector<int> bands;
  for (int b = 1; b <= info.bandCount; ++b) bands.push_back(b);
  const int64_t rowBytes = info.width * info.bandCount * typeSize(info.type);
  const int64_t stripRows = std::max<int64_t>(1, (64ll << 20) / rowBytes);  // as the engine
  const std::vector<StripRange> strips = planStrips(info.height, stripRows);
  std::vector<unsigned char> in(static_cast<size_t>(stripRows * rowBytes));
  std::vector<float> out(static_cast<size_t>(stripRows * info.width * components), 0.0f);
  const int readers = std::max(1, QThread::idealThreadCount());
  StripReader reader(input, bands, info.type, info.width, readers, 1ll << 30);
  double readSeconds = 0, writeSeconds = 0;
  QElapsedTimer timer;
  for (int pass = 1; pass < passes; ++pass)
    for (const StripRange& strip : strips) {
      timer.start();
      reader.read(strip.row0, strip.rows, in.data());
      readSeconds += timer.nsecsElapsed() * 1e-9;
    }
  PendingRaster raster(output, outputDriver(output, ""), info.width, info.height, components,
                       GDT_Float32, {});
  for (const StripRange& strip : strips) {
    timer.start();
    reader.read(strip.row0, strip.rows, in.data());
    readSeconds += timer.nsecsElapsed() * 1e-9;
    timer.start();
    writeStrip(raster.dataset(), GDT_Float32, strip.row0, strip.rows, out.data());
    writeSeconds += timer.nsecsElapsed() * 1e-9;
  }
  timer.start();
  raster.commit();
  writeSeconds += timer.nsecsElapsed() * 1e-9;
  std::printf("read %.3f s (%d pass(es), %.2f GB/s), write %.3f s, total %.3f s\n", readSeconds,
              passes, passes * static_cast<double>(rowBytes) * info.height / readSeconds / 1e9,
              writeSeconds, total.nsecsElapsed() * 1e-9);
  return 0;
}
