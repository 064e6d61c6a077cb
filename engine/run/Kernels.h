#pragma once
// What every job's kernels have, on any device: the base of each algorithm's kernel interface
// (projection/PcaKernels.h, spp/SppKernels.h), which the CPU and the CUDA library implement. No
// GDAL types in any of them: the CUDA library links no GDAL.

#include "core/HostMemory.h"

#include <cstdint>
#include <string>

namespace hyperstream {

// Seconds and bytes of the work a device did, measured on the device (zero on the CPU).
struct DeviceTimes {
  double upload = 0, moments = 0, range = 0, projection = 0, download = 0, spp = 0;
  double search = 0, unmix = 0;  // the unmixing chain's
  int64_t uploadBytes = 0, downloadBytes = 0;
};

class Kernels {
 public:
  virtual ~Kernels() = default;
  virtual std::string name() const = 0;
  // True when the kernels keep every CPU core busy (multi-threaded BLAS): the pipeline then reads
  // while they wait rather than while they run, since BLAS splits its work evenly over the cores
  // and a reader thread stealing one of them stalls all of them.
  virtual bool usesEveryCore() const { return false; }
  // A hint about running faster on this machine, or empty.
  virtual std::string advice() const { return {}; }
  // Host buffers for strips (page-locked for a GPU, so copies run at the bus rate), allocated the
  // way the kernels read them fastest.
  virtual HostMemory allocateHost(size_t bytes) { return allocatePageable(bytes); }
  virtual DeviceTimes deviceTimes() const { return {}; }
};

}  // namespace hyperstream
