#pragma once
// Image-wide detection, file to file: RX, the matched filter, ACE and CEM scored against the
// image's own mean and covariance (detect/Detector.h), a covariance job
// (covariance/CovarianceRun.h) that writes a band of scores per target. Per-column and local
// backgrounds are jobs of their own (detect/ColumnDetectJob.h, detect/LocalRxJob.h).

#include "covariance/CovarianceRun.h"
#include "detect/Detector.h"
#include "spectra/Targets.h"

namespace hyperstream {

class JobGroup;

// outputType: Float32 or Float64 (scores are computed in float64).
struct DetectOptions : CovarianceOptions {
  // The method, the components (0: all; kSignalSubspace; kSceneMaterials) and the shrinkage;
  // its targets are taken from `targetTable` for the selected bands.
  DetectorOptions detector;
  DetectTargets targetTable;
};

struct DetectResult : CovarianceResult {
  Detector detector;  // the scores written
};

// Throws Error (naming the parameter at fault) or Canceled; on any throw no output file is left
// behind and an existing destination is untouched.
DetectResult runDetection(const DetectOptions& options, Feedback& feedback);
// The same job shared by the processes of `group`, each doing its own rows.
DetectResult runDetection(const DetectOptions& options, Feedback& feedback, JobGroup& group);

}  // namespace hyperstream
