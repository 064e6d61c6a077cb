#pragma once
// The endmember methods, each a sequence of passes over the image it searches (SearchPasses: the
// job streams strips through the kernels) and small float64 algebra on the host between them.
//   ATGP (Ren & Chang 2003): the pixel of largest norm, then repeatedly the pixel of largest norm
//     in the orthogonal complement of those found; each pixel's residual energy is kept and
//     deflated by one direction a pass when the budget holds a value per pixel, else each pass
//     projects on every direction found.
//   VCA (Nascimento & Bioucas-Dias 2005): with its SNR estimate choosing the projective or the
//     subspace projection; each endmember the pixel of extreme projection on a random direction
//     orthogonal to those found (directions from the seed). The pixels' projections are kept
//     when they fit the budget (two passes in all), else each search is a pass.
//   N-FINDR (Winter 1999): on the first P − 1 principal components y of each pixel, kept in
//     memory from one pass (P values per pixel, [1; y]); started from ATGP's pixels over the kept
//     [1; y] (the simplex's own vertex vectors); each search finds, for every endmember, the pixel
//     that would grow the simplex's volume most in its place (the volume is linear in one vertex:
//     a row of the inverse vertex matrix), and the replacements that still grow it are made, until
//     a search makes none.

#include "core/Feedback.h"
#include "materials/MaterialCount.h"
#include "pixels/PixelKernels.h"
#include "stats/Moments.h"
#include "stats/PixelSample.h"
#include "stats/SignalSubspace.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hyperstream {

enum class EndmemberMethod { Atgp, Vca, Nfindr };
std::string endmemberMethodName(EndmemberMethod method);        // "atgp", "vca", "nfindr"
EndmemberMethod parseEndmemberMethod(const std::string& name);  // throws Error("METHOD")

// VCA's projection, or Auto: VCA's own choice by its SNR estimate (projective above the threshold
// 15 + 10 log10 P dB), where that SNR also holds for dark pixels. The projective projection divides
// each pixel by its brightness along the mean, which multiplies a dark pixel's noise by mean / its
// brightness (water: by 10-20, 20-26 dB); Auto takes it only when a pixel two standard deviations
// darker than the mean brightness keeps an SNR above the threshold, else the subspace one.
enum class VcaProjection { Auto, Projective, Subspace };
std::string vcaProjectionName(VcaProjection projection);  // "auto", "projective", "subspace"
struct EndmemberSearch;
// "estimated SNR 35.0 dB, ..., subspace projection": VCA's choice and why, for logs and reports.
std::string vcaChoiceText(const EndmemberSearch& search);
VcaProjection parseVcaProjection(const std::string& name);  // throws Error("VCA_PROJECTION")

// SearchSettings::count: as many endmembers as the scene has materials (materials/MaterialCount.h:
// from the moments of the image searched, which VCA and N-FINDR take anyway, and a sample of its
// pixels taken in the same pass; ATGP makes a pass more).
constexpr int kCountFromScene = -1;

struct SearchSettings {
  EndmemberMethod method = EndmemberMethod::Vca;
  int count = 0;      // 2 to kMaxEndmembers, or kCountFromScene
  uint64_t seed = 1;  // VCA's random directions
  VcaProjection projection = VcaProjection::Auto;
};

// What the methods need of the image they search.
class SearchPasses {
 public:
  virtual ~SearchPasses() = default;
  virtual int bands() const = 0;
  virtual int64_t pixels() const = 0;  // of the image: pixel indices are row * width + column
  // One pass each:
  // The moments, and the sampler's pixels taken on the way when one is given.
  virtual Moments moments(PixelSampler* sampler) = 0;
  virtual SearchFound best(const PixelSearch& search) = 0;
  // One pass keeping the projection of every pixel (NaN for invalid ones); searches over what
  // is kept (search.bands = projection.columns) and a pixel's kept values need no pass.
  virtual bool mayKeep(int columns) const = 0;  // whether `columns` values per pixel fit
  virtual void keep(const KeptProjection& projection) = 0;
  // One pass each: ATGP's residual energy kept per pixel, |x|², then less (directionᵀx)².
  virtual void keepEnergy() = 0;
  virtual void deflate(const std::vector<double>& direction) = 0;
  virtual SearchFound bestKept(const PixelSearch& search) = 0;
  virtual std::vector<double> kept(int64_t pixel) = 0;
  // The searched image's values at one pixel (row * width + column).
  virtual std::vector<double> spectrum(int64_t pixel) = 0;
};

struct EndmemberSearch {
  std::vector<int64_t> pixels;  // one per endmember, in the order found
  int passes = 0;               // over the image
  int keptSearches = 0;         // over values kept per pixel (N-FINDR)
  int64_t validPixels = 0;      // of the image searched
  // VCA: the SNR estimate (dB), Auto's estimate for dark pixels after the projective scaling (NaN
  // when not looked at; -inf when such pixels would have no brightness left), and the projection.
  double snrDb = 0;
  double darkSnrDb = NAN;
  bool projective = false;
  // N-FINDR: the simplex volume in the principal components (relative to ATGP's start), the
  // replacements made, and whether it reached a pass without one within the passes allowed.
  double volumeGrowth = 1;
  int replacements = 0;
  bool converged = true;
  // kCountFromScene: the estimates the count was taken from.
  std::optional<SignalSubspace> subspace;
  std::optional<MaterialCount> materials;
};

// Throws Error("COUNT") when the image has fewer valid pixels or independent spectra than
// `count` asks for.
EndmemberSearch findEndmembers(SearchPasses& image, const SearchSettings& settings);

}  // namespace hyperstream
