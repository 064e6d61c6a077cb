#pragma once
// Principal component analysis of a raster, file to file: the engine's main job.

#include "core/Feedback.h"
#include "core/JobOptions.h"
#include "detect/Detector.h"
#include "io/Raster.h"
#include "projection/PcaKernels.h"
#include "projection/PcaModel.h"
#include "stats/NoiseDirection.h"
#include "stats/SignalSubspace.h"
#include "unmixing/MaterialCount.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hyperstream {

class JobGroup;

constexpr int kAllComponents = -1;
// As many components as the signal subspace has dimensions (HySime, stats/SignalSubspace).
constexpr int kSignalSubspace = -2;
// As many components as the scene has materials (unmixing/MaterialCount.h: from HySime's count
// and a sample of the pixels taken in the moments pass); detection's default.
constexpr int kSceneMaterials = -3;

// What the job does with the transform (fitted, or savedTransform).
enum class PcaJobKind {
  Transform,  // writes the components (pca, mnf, apply)
  Denoise,    // writes each pixel rebuilt from its first components (denoise)
  Inverse,    // the input holds components written with savedTransform: rebuilds the image
  Detect,     // writes detection scores from a covariance fit (rx, detect: `detector`)
};

// PCA's options; with `noise` set, the job is an MNF (always of the covariance).
struct PcaOptions : JobOptions {
  PcaJobKind kind = PcaJobKind::Transform;
  // > 0: that many; 0: by minSnr, else variancePercent; kAllComponents: all; kSignalSubspace:
  // HySime's estimate; kSceneMaterials: the scene's materials.
  int components = 0;
  double variancePercent = 99.0;  // of the variance (PCA) or of the summed SNR (MNF)
  std::optional<double> minSnr;   // MNF: the components whose SNR (eigenvalue - 1) reaches it
  MatrixType matrix = MatrixType::Covariance;
  std::optional<NoiseDirection> noise;  // MNF: the neighbour each pixel's noise is taken against
  // Apply: the statistics JSON of an earlier PCA or MNF run, whose transform is applied instead of
  // fitting one (bands: the saved ones unless given, as many; components: the saved count
  // unless given; Byte output: the saved ranges).
  std::string savedTransform;
  std::string statsJson;  // optional report paths
  std::string tableCsv;
  std::string htmlReport;  // optional HTML report (scree plot, loadings, eigenvalues)
  // Detect: the method, the components and the shrinkage (its targets are taken from
  // `targetTable` for the selected bands).
  DetectorOptions detector;
  DetectTargets targetTable;
  int64_t gpuMemoryBytes = 0;  // device memory the GPU may use; 0: its free memory less a margin
};

struct StageTimes {
  // Wall time of each stage as the host saw it; setup: starting the backend and its allocations.
  double setup = 0, read = 0, moments = 0, eigen = 0, range = 0, projection = 0, write = 0,
         total = 0;
  // On a GPU, the device's own timings (copies and kernels) of the same stages.
  DeviceTimes device;
};

struct PcaResult {
  PcaModel model;
  // The signal subspace's estimates from the fit's moments (fitting runs only).
  std::optional<SignalSubspace> subspace;
  // The scene's materials, where the components were counted by them.
  std::optional<MaterialCount> materials;
  RasterInfo input;
  std::vector<int> bands;  // 1-based input band numbers that were used
  int components = 0;      // written to the output (rebuilding: that the output was rebuilt from)
  int64_t totalPixels = 0;
  std::string backend;
  bool resident = false;        // the cube stayed in host memory between the passes
  bool deviceResident = false;  // the cube stayed in GPU memory between the passes
  bool bandMajor = false;  // strips went to the kernels as the band-interleaved file holds them
  int64_t stripRows = 0;
  std::vector<std::string> warnings;
  OutputType outputType = OutputType::Float32;  // resolved (never SameAsInput)
  double outputNodata = 0;
  bool hasOutputNodata = false;
  std::vector<double> byteMinimum, byteMaximum;  // Byte rescale ranges per component
  std::optional<Detector> detector;              // Detect: the scores written
  StageTimes seconds;
};

// Runs the whole job, PCA or MNF. Throws Error (naming the parameter at fault) or Canceled; on any
// throw no output file is left behind and an existing destination is untouched.
PcaResult runPca(const PcaOptions& options, Feedback& feedback);
// The same job shared by the processes of `group` (an MPI run), each doing its own rows; rank 0
// writes the reports. Every process must call it with the same options.
PcaResult runPca(const PcaOptions& options, Feedback& feedback, JobGroup& group);

}  // namespace hyperstream
