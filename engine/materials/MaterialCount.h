#pragma once
// How many materials (endmembers) a scene holds, from two estimates that fail in opposite ways:
// - the signal subspace's dimension (HySime, stats/SignalSubspace.h): exact where the scene is a
//   linear mixture under white noise (it sees materials far below the noise in any one band), but
//   on real scenes, whose noise is correlated across bands and whose materials vary, it counts
//   every direction that variability spans (18 on Jasper Ridge's 4 materials, 43 on Samson's 3);
// - the reconstruction curve's elbow: for P = 2, 3, ... the N-FINDR endmembers of a sample of the
//   image's valid pixels (stats/PixelSample.h) and the sample's mean RMSE under FCLS with them
//   (each point the better of N-FINDR's P and the previous point's endmembers with the worst-fitted
//   pixel added, so that the curve only falls). It falls steeply while each new endmember is a
//   material, then flattens; the elbow is the first P whose next step is less than kElbowRatio of
//   the step into P, where an analyst reading the curve would stop. Where the last materials are
//   small it stops one or two short of them.
// The count is the elbow where it lies more than kAgreement below the subspace's dimension (the
// subspace holds more than materials), else the dimension (both see the same materials; the
// dimension sees the small ones too).

#include "stats/PixelSample.h"
#include "stats/SignalSubspace.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hyperstream {

constexpr int64_t kMaterialSamplePixels = 20000;  // the curve's sample, at most
constexpr double kElbowRatio = 0.25;
constexpr int kAgreement = 2;
constexpr int kShownPastElbow = 3;  // points of the curve computed past its elbow

struct MaterialCount {
  int count = 0;              // the materials counted (2 or more)
  int subspaceDimension = 0;  // HySime's
  int elbow = 0;              // the curve's first; 0: none where it was followed
  std::vector<int> counts;    // the curve: P = 2, 3, ... as far as it was followed
  std::vector<double> meanRmse;
  std::vector<std::vector<int64_t>> endmembers;  // per point: its endmembers' sample pixels
  int64_t samplePixels = 0;
  // Why the count is what it is, in words.
  std::string reason() const;
  // "2: 419, 3: 162.3, 4: 85.96 (counted), 5: 81.59": the curve, for the log.
  std::string curveText() const;
};

// "Materials: 4, where the reconstruction curve bends; ... Mean RMSE by endmember count (...): 2:
// 419, 3: 162.3, 4: 85.96 (elbow), 5: 81.59. Virtual dimensionality (HFC): 9 / 9 / 7 ...": for
// logs.
std::string materialCountText(const MaterialCount& count, const SignalSubspace& subspace);

// The count of a scene whose signal subspace has `subspaceDimension` dimensions, with the curve
// over `sample`, at most `maxCount`. Throws Error("INPUT") when the sample has fewer than three
// valid pixels or spans no simplex of two endmembers.
MaterialCount countMaterials(const PixelSample& sample, int subspaceDimension, int maxCount);

}  // namespace hyperstream
