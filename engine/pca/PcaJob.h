#pragma once
// The transform family, file to file: PCA or MNF components fitted on the image (runPca), a saved
// transform applied to another image (runApply), the image rebuilt from its first components
// (runDenoise), or from components written earlier (runInverse). Each is a covariance job
// (covariance/CovarianceRun.h) of its own (pca/TransformRun.h).

#include "covariance/CovarianceRun.h"
#include "projection/PcaModel.h"
#include "stats/NoiseDirection.h"

#include <optional>
#include <string>

namespace hyperstream {

class JobGroup;

// The transform's options; with `noise` set the fit is an MNF (always of the covariance).
struct PcaOptions : CovarianceOptions {
  // > 0: that many; 0: by minSnr, else variancePercent; kAllComponents: all; kSignalSubspace:
  // HySime's estimate; kSceneMaterials: the scene's materials. Apply: the saved count where 0;
  // inverse: the component raster's first that many bands (all where 0).
  int components = 0;
  double variancePercent = 99.0;  // of the variance (PCA) or of the summed SNR (MNF)
  std::optional<double> minSnr;   // MNF: the components whose SNR (eigenvalue - 1) reaches it
  MatrixType matrix = MatrixType::Covariance;
  std::optional<NoiseDirection> noise;  // MNF: the neighbour each pixel's noise is taken against
  // Apply and inverse: the statistics JSON of the fitting run, whose transform is used instead of
  // fitting one (apply's bands: the saved ones unless given, as many; Byte output: the saved
  // ranges).
  std::string savedTransform;
};

struct PcaResult : CovarianceResult {};

// Each throws Error (naming the parameter at fault) or Canceled; on any throw no output file is
// left behind and an existing destination is untouched.
PcaResult runPca(const PcaOptions& options, Feedback& feedback);
PcaResult runApply(const PcaOptions& options, Feedback& feedback);
PcaResult runDenoise(const PcaOptions& options, Feedback& feedback);
PcaResult runInverse(const PcaOptions& options, Feedback& feedback);
// The same jobs shared by the processes of `group` (an MPI run), each doing its own rows; rank 0
// writes the reports. Every process must call it with the same options.
PcaResult runPca(const PcaOptions& options, Feedback& feedback, JobGroup& group);
PcaResult runDenoise(const PcaOptions& options, Feedback& feedback, JobGroup& group);

}  // namespace hyperstream
