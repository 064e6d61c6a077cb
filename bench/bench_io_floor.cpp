// The I/O floor of a PCA run (bench/IoFloor.h), as a program of its own:
//   bench_io_floor INPUT OUTPUT COMPONENTS [PASSES] [TYPE]
// PASSES=2 reads the input twice, as a streamed run whose cube does not fit its RAM budget does.
// TYPE: the output's GDAL data type (default Float32), or "input" for the input's (as denoise
// writes with COMPONENTS 0).

#include "IoFloor.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: bench_io_floor INPUT OUTPUT COMPONENTS [PASSES] [TYPE]\n");
    return 2;
  }
  const int passes = argc > 4 ? std::atoi(argv[4]) : 1;
  GDALDataType type = GDT_Float32;
  if (argc > 5) {
    type = std::strcmp(argv[5], "input") == 0 ? GDT_Unknown : GDALGetDataTypeByName(argv[5]);
    if (type == GDT_Unknown && std::strcmp(argv[5], "input") != 0) {
      std::fprintf(stderr, "bench_io_floor: unknown data type %s\n", argv[5]);
      return 2;
    }
  }
  const hyperstream::bench::IoFloorTimes times =
      hyperstream::bench::ioFloor(argv[1], argv[2], std::atoi(argv[3]), passes, type);
  std::printf("read %.3f s (%d pass(es), %.2f GB/s), write %.3f s, total %.3f s\n", times.read,
              passes, times.gigabytesRead / times.read, times.write, times.total);
  return 0;
}
