#pragma once
// The per-pixel jobs' per-strip work, behind one interface so that they run unchanged on the CPU
// or a GPU: the unmixing chain's moments (for VCA's and N-FINDR's subspaces), the pixel searches
// every endmember method is made of and the abundances; SAM's angles and local RX's windows.

#include "core/JobOptions.h"
#include "pixels/AbundanceSolver.h"
#include "pixels/LocalWindows.h"
#include "pixels/SearchScore.h"
#include "projection/PcaKernels.h"  // StripView
#include "run/Kernels.h"
#include "stats/Moments.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

namespace hyperstream {

// A search: z = Wᵀ(x − center) (W: bands x columns) for each valid pixel x, scored by the rule
// (pixels/SearchScore.h).
struct PixelSearch {
  SearchRule rule = SearchRule::Residual;
  int bands = 0;
  int columns = 0;
  std::vector<double> center;        // per band
  std::vector<double> weights;       // bands x columns, row-major
  int slotCount = 1;                 // Linear: scores per pixel, each with its own best pixel
  std::vector<double> constants;     // Linear: per slot
  std::vector<double> coefficients;  // Linear: slots x columns, row-major
  int scoreCount() const { return rule == SearchRule::Linear ? slotCount : 1; }
  ScoreRule scoreRule() const {
    return {rule, columns, scoreCount(), constants.data(), coefficients.data()};
  }
};

// Values kept per pixel (N-FINDR's reduced image): z = Wᵀ(x − center) + offset.
struct KeptProjection {
  int bands = 0;
  int columns = 0;
  std::vector<double> center;   // per band
  std::vector<double> weights;  // bands x columns, row-major
  std::vector<double> offset;   // per column
};

// The best pixel for one score: the largest score, the lowest pixel index among equal ones, so
// that the result is the same whatever the strips and the device's order.
struct Candidate {
  double score = -1;   // scores are >= 0; -1: no valid pixel yet
  int64_t pixel = -1;  // index in the image, row * width + column
  bool beats(const Candidate& other) const {
    if (pixel < 0) return false;
    if (other.pixel < 0) return true;
    return score > other.score || (score == other.score && pixel < other.pixel);
  }
};

// What a search found in a strip: the best pixel per score, and how many pixels were valid.
struct SearchFound {
  std::vector<Candidate> best;
  int64_t validPixels = 0;
};

// The abundances' model: the endmember spectra and their Gram matrix.
struct Unmixing {
  int bands = 0;
  int endmembers = 0;
  AbundanceMethod method = AbundanceMethod::Fcls;
  std::vector<double> spectra;            // endmembers x bands, row-major
  std::vector<double> gram;               // endmembers x endmembers: spectra · spectraᵀ
  OutputType type = OutputType::Float32;  // of the abundances and the RMSE: Float32 or Float64
  bool rmse = false;                      // also each pixel's reconstruction error
};

// The spectral angle mapper's library on the image's bands.
struct AngleLibrary {
  int bands = 0;
  int spectra = 0;
  std::vector<double> units;  // spectra x bands, row-major, each of norm 1
  // Radians: a pixel farther than this from every spectrum is left unclassified (class 0).
  double maxAngle = 3.141592653589793;
  OutputType type = OutputType::Float32;  // of the angles: Float32 or Float64
};

// What unmix() did on a strip.
struct UnmixStats {
  int64_t validPixels = 0;
  int64_t unsolved = 0;  // pixels whose active set did not settle (written as nodata)
};

class PixelKernels : public Kernels {
 public:
  // Before the first strip: the image's bands and type, and the largest strip; layout.pixels is
  // the image's for a job of several passes (0 for one). Returns true when the kernels keep the
  // cube from the first pass on (in GPU memory): later passes then pass strips with null data.
  virtual bool prepare(const CubeLayout& layout) = 0;
  // Whether the kernels take band-major strips (StripView::bandMajor), with the same results as
  // from pixel-interleaved ones; the kept values are pixel-interleaved in any case.
  virtual bool takesBandMajor() const { return false; }
  // Adds a strip's valid pixels to the running moments (as PcaKernels).
  virtual void accumulateMoments(const StripView& strip) = 0;
  virtual Moments takeMoments(int bands) = 0;
  // The best valid pixel of the strip for each of the search's scores (pixel indices in the
  // image: strip.firstPixel + p).
  virtual SearchFound search(const StripView& strip, const PixelSearch& search) = 0;
  // Keeps the projection of every valid pixel of the strip (NaN for invalid pixels) in the
  // kernels' memory, at its place in the image (prepare() told them its pixels): one pass over
  // the image keeps the whole reduced image.
  virtual void keepProjection(const StripView& strip, const KeptProjection& projection) = 0;
  // ATGP's residual energy kept per pixel: |x|² to start with (one kept value, NaN for invalid
  // pixels), then less (directionᵀx)² for each direction of an orthonormal basis (`deflateKept`).
  virtual void keepEnergy(const StripView& strip) = 0;
  virtual void deflateKept(const StripView& strip, const std::vector<double>& direction) = 0;
  // A search over the kept values as if they were the pixels' bands (search.bands = the kept
  // columns); no pass over the image.
  virtual SearchFound searchKept(const PixelSearch& search) = 0;
  // One pixel's kept values.
  virtual std::vector<double> keptValues(int64_t pixel) = 0;
  // Each pixel's abundances into `abundances` (pixel-interleaved, unmixing.endmembers values per
  // pixel, unmixing.type) and, with unmixing.rmse, its RMSE into `rmse`; invalid pixels get NaN.
  virtual UnmixStats unmix(const StripView& strip, const Unmixing& unmixing, void* abundances,
                           void* rmse) = 0;
  // Each valid pixel's spectral angle to each spectrum, 2 asin(|x/|x| - s| / 2) (as exact for
  // small angles as for large ones, where acos of the cosine loses half the digits), into
  // `angles` (pixel-interleaved, library.spectra per pixel; may be null), the smallest into
  // `bestAngle` and its spectrum (the first of equal ones) as class 1..spectra into `classes`, 0
  // where the smallest angle exceeds library.maxAngle. Invalid pixels and pixels of zero norm:
  // class 0, angles NaN. Returns the number of valid pixels.
  virtual int64_t classify(const StripView& strip, const AngleLibrary& library, uint16_t* classes,
                           void* bestAngle, void* angles) = 0;
  // Local RX's scores (pixels/LocalWindows.h) of the strip's rows to score into `scores` (one
  // per pixel, rule.type); NaN for invalid pixels and those whose background cannot be factored.
  // Needs no prepare().
  virtual void windowScores(const WindowStrip& strip, const WindowRule& rule, void* scores) = 0;
};

// On every CPU core (the worker threads).
std::unique_ptr<PixelKernels> makeCpuPixelKernels();

}  // namespace hyperstream
