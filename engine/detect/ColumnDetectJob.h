#pragma once
// Detection with each image column's own statistics, for pushbroom sensors (AVIRIS-NG, EMIT,
// PRISMA, EnMAP): every column is seen by its own detector element, with its own gains and
// spectral smile, so the image-wide covariance mixes the columns' differences into the
// background the targets must stand out of. Methane mapping (mag1c, EMIT's enhancement product)
// takes the mean and covariance per column. Pass 1 sums each column's moments, each column's
// C_c + εI is factored (Cholesky, L_c), pass 2 scores each pixel against its column's: RX |y|²,
// the matched filter u·y / u·u and ACE (u·y)² / ((u·u) |y|²), with y = L_c⁻¹(x − m_c) and
// u = L_c⁻¹ t_c. A target is a spectrum (t_c = target − m_c) or a unit absorption spectrum k
// (t_c = −m_c ⊙ k: the matched filter is then the enhancement in k's units).

#include "core/Feedback.h"
#include "core/JobOptions.h"
#include "detect/DetectJob.h"
#include "detect/Detector.h"
#include "io/Raster.h"
#include "run/Kernels.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hyperstream {

// outputType: Float32 or Float64 (scores are computed in float64).
struct ColumnDetectOptions : JobOptions {
  DetectMethod method = DetectMethod::Rx;  // rx, mf or ace
  DetectTargets targetTable;               // mf and ace
  bool absorption = false;                 // targets are unit absorption spectra
  // ε = shrinkage × the column's mean band variance; unset: the column's noise variance (half
  // the mean squared difference of vertically adjacent valid pixels, over its varying bands).
  std::optional<double> shrinkage;
  std::string htmlReport;      // optional (detect/DetectReport.h)
  int64_t gpuMemoryBytes = 0;  // device memory a GPU may use; 0: its free memory less a margin
};

struct ColumnDetectResult {
  RasterInfo input;
  std::vector<int> bands;
  std::vector<std::string> bandNames;  // one per output band
  int64_t validPixels = 0;
  int64_t columnsUnscored = 0;  // columns with fewer than two valid pixels (written as nodata)
  double meanEpsilon = 0;       // the scored columns' mean ε
  int64_t statisticsBytes = 0;  // the columns' moments and factors held in memory
  std::string backend;
  bool bandMajor = false;  // strips went to the kernels as the band-interleaved file holds them
  DeviceTimes device;
  double fitSeconds = 0;  // the columns' factors, on the CPU
  double seconds = 0;
};

// The per-column form of a detection job's options (rx, detect): the shared options, the
// method, targets, target mode and shrinkage; Error("COMPONENTS") where components are asked for.
ColumnDetectOptions perColumnOptions(const DetectOptions& options);

// On the CPU or one GPU (a GPU failing in an `auto` run: again on the CPU). Throws Error (naming
// the parameter: METHOD, TARGETS, SHRINKAGE, RAM_MB, DEVICE, ...) or Canceled; on any throw no
// output is left behind.
ColumnDetectResult runColumnDetection(const ColumnDetectOptions& options, Feedback& feedback);

}  // namespace hyperstream
