#pragma once
// Local RX's first job: the image's first K principal components, in Float64, in image geometry
// (a covariance job, covariance/CovarianceRun.h), for the windows to read back.

#include "covariance/CovarianceRun.h"

namespace hyperstream {

// Writes the components to options.output (its format and type are set here); `components` is K,
// kSignalSubspace or kSceneMaterials. Throws Error or Canceled; nothing is left behind on a throw.
CovarianceResult writeWindowComponents(const CovarianceOptions& options, int components,
                                       Feedback& feedback);

}  // namespace hyperstream
