#pragma once
// The per-column detectors' kernels (detect/ColumnDetectJob), on the CPU (CpuColumnDetectKernels,
// with the arithmetic of detect/ColumnKernels) or a GPU (the CUDA library): pass 1 adds each
// strip's valid pixels to its column's sums, the job factors each column's covariance on the host
// from the sums the kernels give back, and pass 2 scores each pixel against its column's detector.

#include "core/JobOptions.h"
#include "core/Samples.h"
#include "detect/Detector.h"
#include "run/Kernels.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace hyperstream {

// One column's running sums about a fixed shift (its first valid pixel in the image's order), so
// that large DN means cancel before they are squared: s1 = Σ d, s2 = Σ d dᵀ (the upper triangle,
// packed by rows), d = x − shift; low and high per band (for constant bands). With them, the
// noise: Σ (x_r − x_{r−1})² per band over the column's vertically adjacent valid pixels (`pairs`
// of them; `above`: its last valid pixel, on row aboveRow).
struct ColumnSums {
  int64_t count = 0;
  std::vector<double> shift, s1, s2;
  std::vector<double> low, high;
  std::vector<double> noise, above;
  int64_t pairs = 0, aboveRow = -2;
};

// One column's detector: its mean, the packed lower Cholesky factor of C + εI (rows i: j ≤ i;
// none for the matched filter, which is linear), per target the matched filter
// w = C⁻¹t / tᵀC⁻¹t (mf) or û = L⁻¹t / |L⁻¹t| (ace).
struct ColumnDetector {
  bool scored = false;
  double epsilon = 0;  // added to the covariance's diagonal
  std::vector<double> mean, factor;
  std::vector<std::vector<double>> filters;
};

struct ColumnLayout {
  int64_t width = 0;
  int bands = 0;
  SampleType type = SampleType::UInt16;
  std::vector<double> nodata;  // per band (NaN: none)
  int64_t maxStripRows = 0;
  DetectMethod method = DetectMethod::Rx;       // rx, mf or ace
  int outputs = 1;                              // scores per pixel: 1 (rx) or one per target
  OutputType outputType = OutputType::Float32;  // Float32 or Float64
  // Strips come band-major (band b's rows together, as a band-interleaved file holds them), for
  // kernels that take them.
  bool bandMajor = false;
};

// The CPU adds a column's pixels to its sums a group of rows at a time: strips hold whole groups
// (the job's strips are multiples of it), so that the sums are the same whatever the strips.
constexpr int kColumnGroupRows = 32;

class ColumnDetectKernels : public Kernels {
 public:
  virtual void prepare(const ColumnLayout& layout) = 0;
  // Whether the kernels take band-major strips (ColumnLayout::bandMajor), with the same results.
  virtual bool takesBandMajor() const { return false; }
  // Pass 1: the valid pixels of rows [row0, row0 + rows) (pixel-interleaved, or as the layout
  // says) into their columns' sums; strips come in the image's order.
  virtual void addStrip(int64_t row0, int64_t rows, const void* strip) = 0;
  // After pass 1: column `column`'s sums into `sums` (whose vectors' room may be reused); the
  // kernels need them no more.
  virtual void takeSums(int64_t column, ColumnSums& sums) = 0;
  // Pass 2's detectors, one per column (the kernels take them).
  virtual void setDetectors(std::vector<ColumnDetector> detectors) = 0;
  // Each pixel's scores (layout.outputs of layout.outputType, pixel-interleaved; NaN for an invalid
  // pixel or an unscored column).
  virtual void score(int64_t rows, const void* strip, void* scores) = 0;
};

std::unique_ptr<ColumnDetectKernels> makeCpuColumnDetectKernels();

}  // namespace hyperstream
