#pragma once
// PCA's heavy per-strip work, behind one interface so that the job runs unchanged on the CPU
// (OpenBLAS) or a GPU (the CUDA library).

#include "core/JobOptions.h"
#include "core/Samples.h"
#include "core/StripView.h"
#include "run/Kernels.h"
#include "stats/Moments.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace hyperstream {

// Image rows per group for an image of this width: enough pixels for BLAS to run at full rate.
int64_t groupRows(int64_t width);

// Detection scores (rx, detect) written instead of the components, computed in float64: the
// first `whitened` components are the pixel whitened, y = Λ^-1/2 Vᵀ (x - m), whose squared length
// is its Mahalanobis distance (the RX score); with `targetPower` (ACE), each further component z_t
// is a target's matched filter score and becomes z_t² · targetPower[t] / |y|² (0 where |y| = 0).
struct DetectionScores {
  int whitened = 0;                 // 0: no scores
  std::vector<double> targetPower;  // tᵀ C⁻¹ t per target; empty: the RX score alone

  bool active() const { return whitened > 0; }
  int outputs(int components) const { return targetPower.empty() ? 1 : components - whitened; }
};

// A linear transform of centred pixels: component k of pixel p = sum_b (x[p,b] - center[b]) *
// weights[b*components + k]. Rebuilding (denoise, inverse), the components are then taken back:
// output j of pixel p = offset[j] + sum_k component[k] * restore[k*outputs + j]. Scoring, they
// become detection scores (DetectionScores).
struct Projection {
  int bands = 0;
  int components = 0;
  std::vector<double> center;   // per band
  std::vector<double> weights;  // bands x components, row-major
  int outputs = 0;              // rebuilding only
  std::vector<double> restore;  // components x outputs, row-major; empty: write the components
  std::vector<double> offset;   // per output
  DetectionScores scores;

  bool rebuilds() const { return !restore.empty(); }
  int outputCount() const {
    return rebuilds() ? outputs : scores.active() ? scores.outputs(components) : components;
  }
};

// How projected values become output values: components (float, or Byte rescaled from their
// ranges) or rebuilt values (any type, by toSample's rule in core/Rounding.h).
struct OutputEncoding {
  OutputType type = OutputType::Float32;  // never SameAsInput
  double nodata = 0.0;                    // written for invalid pixels
  bool avoidNodata = false;  // rebuilt integers: valid values are kept off nodata (toSample)
  // Byte components: value v of component k becomes round(byteLow + (v - min[k]) * scale[k]),
  // rounding half away from zero.
  double byteLow = 0.0;
  std::vector<double> byteMinimum;
  std::vector<double> byteScale;
};

// The precision projections run in: float32 for Float32 and Byte components, else float64 (so that
// rebuilt integers round as a float64 reference does, and scores match one).
inline bool projectsInFloat(const Projection& projection, const OutputEncoding& encoding) {
  if (projection.scores.active()) return false;
  return encoding.type == OutputType::Float32 ||
         (encoding.type == OutputType::Byte && !projection.rebuilds());
}

// Calls f with a value of the C++ type of a (resolved) output type.
template <class F>
decltype(auto) withOutputType(OutputType type, F&& f) {
  // In OutputType's order.
  return withTypeAt<float, double, uint8_t, uint16_t, int16_t, uint32_t, int32_t>(
      static_cast<int>(type), std::forward<F>(f));
}

class PcaKernels : public Kernels {
 public:
  // Called once before the first pass. Returns true when the kernels keep the whole cube
  // themselves from the first pass on (in device memory): the later passes then pass StripViews
  // with null data and nothing is read again.
  virtual bool prepare(const CubeLayout& layout) = 0;
  // Whether the kernels take band-major strips (StripView::bandMajor); results are bitwise the
  // same as from the pixel-interleaved strip.
  virtual bool takesBandMajor() const { return false; }
  // Adds the valid pixels of one strip to the running moments: count, mean, centred co-moment
  // and band ranges. Strip data may be reused as soon as this returns.
  virtual void accumulateMoments(const StripView& strip) = 0;
  // The moments of every strip accumulated since the last call, and starts afresh.
  virtual Moments takeMoments(int bands) = 0;
  // MNF: whether these kernels take the moments of the noise differences of samples of `type`
  // themselves (from the strips they hold); if not, the job differences the strips on the host for
  // other kernels.
  virtual bool takesNoise(SampleType /*type*/) const { return false; }
  // Kernels that take the noise, once after prepare(): from every strip accumulateMoments takes
  // from now on, also the moments of its noise differences x(r - rowStep, c - columnStep) -
  // x(r, c) over valid pairs (as NoiseDifferences makes them), in rows of `width` pixels.
  virtual void prepareNoise(int /*rowStep*/, int /*columnStep*/, int64_t /*width*/) {}
  // The row above the first strip to come (one row; a worker that starts mid-image).
  virtual void setNoiseRowAbove(const StripView& /*row*/) {}
  // The noise differences' moments since the last call (count, mean and co-moment; no ranges).
  // Only called on kernels that take the noise.
  virtual Moments takeNoiseMoments(int /*bands*/) { return {}; }
  // Range of each projected component over the strip's valid pixels.
  virtual ComponentRange componentRange(const StripView& strip, const Projection& projection) = 0;
  // Projects a strip (and rebuilds it, when the projection rebuilds) and encodes it into `output`
  // (pixel-interleaved, outputCount() values per pixel, encoding.type); invalid pixels get
  // encoding.nodata.
  virtual void project(const StripView& strip, const Projection& projection,
                       const OutputEncoding& encoding, void* output) = 0;
};

// The multi-core CPU kernels (their own worker threads and OpenBLAS, all cores). The moments of
// integer samples are exact integer sums (IntegerMoments), other samples' are summed group by
// group in order (Chan's merge), and each pixel is projected on its own, so the results are
// bitwise the same whatever the strip heights and the thread count. The own loops use 64-byte
// vectors on CPUs with AVX-512, else 32-byte ones; `wideVectors` forces one or the other (the
// results agree to rounding).
std::unique_ptr<PcaKernels> makeCpuPcaKernels();
std::unique_ptr<PcaKernels> makeCpuPcaKernels(bool wideVectors);

}  // namespace hyperstream
