#pragma once
// SPP's per-strip work (see SppJob.h for what it computes), behind one interface so that the job
// runs unchanged on the CPU or a GPU.

#include "core/JobOptions.h"
#include "core/Samples.h"
#include "run/Kernels.h"

#include <cstdint>
#include <memory>

namespace hyperstream {

// One strip: the strip's rows with the window's halo rows around them, pixel-interleaved in the
// file's type.
struct SppStrip {
  const void* data = nullptr;  // rows [blockRow0, blockRow0 + blockRows)
  SampleType type = SampleType::Float64;
  int bands = 0;
  const double* nodata = nullptr;  // per band, NaN for none
  int64_t width = 0, height = 0;   // of the image
  int64_t blockRow0 = 0, blockRows = 0;
  int64_t row0 = 0, rows = 0;  // the rows to compute, inside the block
  int halo = 0;                // window / 2
  bool mirror = false;         // border rule: mirror, else truncate
  const double* centroid = nullptr;
  double noiseVariance =
      0;  // tr N: each angle less sqrt(tr N (1/|y_p|² + 1/|y_q|²)); 0: as published
  OutputType outputType = OutputType::Float32;  // of the displaced spectra: Float32 or Float64
  double outputNodata = 0;
};

// Where a strip's results go: rows x width pixels each.
struct SppOutput {
  void* cube = nullptr;  // displaced spectra, pixel-interleaved, SppStrip::outputType
  float* alpha = nullptr;
  float* rho = nullptr;
};

class SppKernels : public Kernels {
 public:
  // Spatial preprocessing of one strip; returns the sum of alpha over its valid pixels.
  virtual double spatialPreprocess(const SppStrip& strip, const SppOutput& output) = 0;
};

// On every CPU core (CpuSpp).
std::unique_ptr<SppKernels> makeCpuSppKernels();

}  // namespace hyperstream
