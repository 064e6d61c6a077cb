// The I/O floor of a PCA run (bench/IoFloor.h), as a program of its own:
//   bench_io_floor INPUT OUTPUT COMPONENTS [PASSES]
// PASSES=2 reads the input twice, as a streamed run whose cube does not fit its RAM budget does.

#include "IoFloor.h"

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: bench_io_floor INPUT OUTPUT COMPONENTS [PASSES]\n");
    return 2;
  }
  const int passes = argc > 4 ? std::atoi(argv[4]) : 1;
  const hyperstream::bench::IoFloorTimes times =
      hyperstream::bench::ioFloor(argv[1], argv[2], std::atoi(argv[3]), passes);
  std::printf("read %.3f s (%d pass(es), %.2f GB/s), write %.3f s, total %.3f s\n", times.read,
              passes, times.gigabytesRead / times.read, times.write, times.total);
  return 0;
}
