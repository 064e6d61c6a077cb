#pragma once
// The two-pass skeleton of every job that fits the image's covariance and projects each pixel
// through the fit (PCA, MNF, apply, denoise, inverse, the image-wide detectors): open the input,
// check the outputs, start the kernels, plan the memory, the moments pass, the fit, the projection
// pass, the reports and the commit; with the strip pipeline, the backends, the GPU → CPU retry,
// several GPUs and MPI ranks. A family derives from CovarianceRun and says what is its own: the
// bands it reads, what it fits, the projection it writes, the output's bands and the reports.

#include "core/Error.h"
#include "core/Feedback.h"
#include "core/JobOptions.h"
#include "io/DecompressedCopy.h"
#include "io/EmptyBands.h"
#include "io/OutputCheck.h"
#include "io/PendingRaster.h"
#include "io/Raster.h"
#include "materials/MaterialCount.h"
#include "projection/PcaKernels.h"
#include "projection/PcaModel.h"
#include "run/DeviceSelection.h"
#include "run/JobGroup.h"
#include "run/Pipeline.h"
#include "run/StripPlan.h"
#include "stats/NoiseDifferences.h"
#include "stats/NoiseDirection.h"
#include "stats/PixelSample.h"
#include "stats/SignalSubspace.h"

#include <QElapsedTimer>
#include <QString>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

class GDALDataset;

namespace hyperstream {

constexpr int kAllComponents = -1;
// As many components as the signal subspace has dimensions (HySime, stats/SignalSubspace).
constexpr int kSignalSubspace = -2;
// As many components as the scene has materials (materials/MaterialCount.h: from HySime's count
// and a sample of the pixels taken in the moments pass); detection's default.
constexpr int kSceneMaterials = -3;

// What the options of every covariance job add to JobOptions.
struct CovarianceOptions : JobOptions {
  std::string statsJson;  // optional: the fit's statistics (covariance/FitStatistics.h)
  std::string tableCsv;   // optional: its eigenvalues, a row per component
  std::string htmlReport;
  int64_t gpuMemoryBytes = 0;  // device memory the GPU may use; 0: its free memory less a margin
};

struct StageTimes {
  // Wall time of each stage as the host saw it; setup: starting the backend and its allocations.
  double setup = 0, read = 0, moments = 0, eigen = 0, range = 0, projection = 0, write = 0,
         total = 0;
  // On a GPU, the device's own timings (copies and kernels) of the same stages.
  DeviceTimes device;
};

struct CovarianceResult {
  PcaModel model;
  // The signal subspace's estimates from the fit's moments (fitting runs only).
  std::optional<SignalSubspace> subspace;
  // The scene's materials, where the components were counted by them.
  std::optional<MaterialCount> materials;
  std::optional<NoiseDirection> noise;  // MNF: the neighbour each pixel's noise was taken against
  RasterInfo input;
  std::vector<int> bands;  // 1-based input band numbers that were used
  int components = 0;      // projected (rebuilding: that the output was rebuilt from)
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
  StageTimes seconds;
};

// One worker's run of a covariance job (the whole image, or its rows when it is one of several
// GPUs or MPI ranks), as named steps. Throws Error (naming the parameter at fault) or Canceled;
// on any throw no output file is left behind and an existing destination is untouched.
class CovarianceRun {
 public:
  CovarianceRun(const CovarianceOptions& options, const DeviceChoice& device, Feedback& feedback,
                JobGroup& group);
  virtual ~CovarianceRun();
  CovarianceRun(const CovarianceRun&) = delete;
  CovarianceRun& operator=(const CovarianceRun&) = delete;

 protected:
  // The steps, in order; returns the result of this worker.
  CovarianceResult runSteps();

  // What a family says. Before the input is opened:
  virtual BandList inputBands() const { return options_.bands; }
  // Opens input_ (the default: the bands above, through openJobInput).
  virtual void openImage();
  // After: its checks of the input, and result_.outputType resolved.
  virtual void checkInput() { result_.outputType = options_.outputType; }
  virtual std::vector<InputFile> otherInputs() const { return {}; }  // read besides INPUT
  virtual int outputBands() const { return bandCount(); }
  virtual std::optional<NoiseDirection> noise() const { return {}; }
  virtual int extraProjections() const { return 0; }  // the kernels' columns beyond the bands
  // A model given rather than fitted (a saved transform): the image is read once, no moments.
  virtual const PcaModel* givenModel() const { return nullptr; }
  // The fit (noise: MNF's noise moments, empty without noise()).
  virtual PcaModel fitModel(const Moments& moments, const Moments& noise) = 0;
  virtual bool needsSubspace() const { return false; }    // no estimate is an error
  virtual bool countsMaterials() const { return false; }  // the moments pass samples pixels
  // The projection to write (projection_) and result_.components.
  virtual void choose() = 0;
  // How the projection's values are written (Byte output: a range pass, rangesPass()).
  virtual OutputEncoding encode() = 0;
  virtual QString bandDescription(int band) const = 0;
  // What the output records besides its bands (the fit, the bands' wavelengths).
  virtual void describeOutput(GDALDataset& /*dataset*/, const OutputEncoding& /*encoding*/) const {}
  virtual double momentsProgressEnd() const { return 50.0; }
  virtual double projectionProgressStart() const { return momentsProgressEnd(); }
  // Rank 0, every row written, before the output is moved into place.
  virtual void writeReports() = 0;

  // What the skeleton offers a family.
  int bandCount() const { return static_cast<int>(result_.bands.size()); }
  // The float output's nodata: the first declared of `nodata`, else where some pixels are
  // invalid NaN (0 for integer types); integer outputs keep valid values off it.
  void setPlainNodata(OutputEncoding& encoding, const std::vector<double>& nodata,
                      bool someInvalid);
  // A pass over the image for the projection's range per component, merged over the workers.
  ComponentRange rangesPass(double progressFrom, double progressTo);
  // The components a count option gives where it names no number: kAllComponents,
  // kSignalSubspace or kSceneMaterials, within the fit's components; else `asked` itself.
  int countedComponents(int asked) const;
  double elapsedSeconds() const { return total_.nsecsElapsed() * 1e-9; }
  PendingRaster& output() const { return *output_; }

  const CovarianceOptions& options_;
  Feedback& feedback_;
  JobGroup& group_;
  JobInput input_;
  CovarianceResult result_;
  Projection projection_;

 private:
  struct OutputHandle;
  void openInput();
  void checkOutputs();
  void startKernels();
  void planMemory();
  void copyCompressedInput();
  void prepareKernels();
  void prepareNoise();
  void computePass(int inputBuffers, const StripPipeline::Stages::Read& read,
                   const std::function<void(const StripView&)>& compute, double& seconds,
                   double progressFrom, double progressTo);
  Moments momentsPass();
  void fit(const Moments& moments);
  void estimateSubspace(const Moments& moments);
  void countSceneMaterials();
  std::unique_ptr<PendingRaster> createOutput(const OutputEncoding& encoding) const;
  OutputHandle openOutput(const OutputEncoding& encoding);
  void projectionPass(const OutputEncoding& encoding);
  CovarianceResult finish();

  StripView stripView(const StripRange& range, const void* data) const;
  unsigned char* residentStrip(const StripRange& range) const;
  const void* readFromFile(const StripRange& range, unsigned char* buffer);
  // The later passes' source: the GPU's copy (null), the host's, or the file again (applying a
  // saved transform, the projection is the first pass).
  StripPipeline::Stages::Read readAgainStage();
  int inputBuffers() const;
  // Once the kernels hold the cube, the later passes read nothing.
  int laterInputBuffers() const;
  size_t inputStripBytes() const;
  HostAllocator allocator();

  QElapsedTimer total_, setup_;
  double selectionSeconds_ = 0;
  KernelStart<PcaKernels> starting_;
  RowShare share_;
  RasterFormat format_;
  std::unique_ptr<PcaKernels> kernels_;
  StripNeeds needs_;
  StripPlan plan_;
  int64_t inputRowBytes_ = 0;
  int64_t rowsPerGroup_ = 1;
  HostMemory cube_{nullptr, [](unsigned char*) {}};
  std::unique_ptr<DecompressedCopy> copy_;  // read instead of a compressed input
  std::unique_ptr<StripReader> reader_;
  std::optional<HostBuffers> inputStrips_;  // every pass's input pool
  bool bandMajor_ = false;  // strips as the band-interleaved file holds them (StripView)
  // MNF: the noise differences of each strip and the kernels that take their moments.
  std::unique_ptr<NoiseDifferences> noise_;
  std::unique_ptr<PcaKernels> noiseKernels_;
  Moments noiseMoments_;
  std::optional<PixelSampler> sampler_;       // countsMaterials(): pass 1 fills it
  std::unique_ptr<PendingRaster> ownOutput_;  // one worker, or MPI rank 0
  PendingRaster* output_ = nullptr;           // the output rank 0 commits
};

// How a family's job runs on the devices its options name.
template <class Options, class Result>
struct CovarianceJob {
  std::string name;                           // for messages: "PCA", "detection"
  std::function<void(const Options&)> check;  // its options, before any worker starts
  // One worker's run.
  std::function<Result(const Options&, const DeviceChoice&, Feedback&, JobGroup&)> worker;
};

// The job shared by the workers of `group` (threads on several GPUs, MPI ranks), each doing its
// own rows; rank 0 writes the reports. Alone, a GPU that fails is left for the CPU.
template <class Options, class Result>
Result runInGroup(const CovarianceJob<Options, Result>& job, const Options& options,
                  Feedback& feedback, JobGroup& group) {
  try {
    job.check(options);
    if (group.size() > 1) {
      // No rerun on the CPU: every rank would have to start again.
      try {
        return job.worker(options, options.device, feedback, group);
      } catch (const DeviceError& e) {
        throw Error("DEVICE", std::string("the GPU failed: ") + e.what() +
                                  "; a job shared by several GPUs or MPI ranks is not rerun on "
                                  "the CPU (device cpu does that)");
      }
    }
    return retryingOnTheCpu(options.device, feedback, [&](const DeviceChoice& device) {
      return job.worker(options, device, feedback, group);
    });
  } catch (...) {
    rethrowAsJobError(options.ramBytes);
  }
}

// The job in this process: on the CPU, one GPU, or one thread per GPU (each with its share of
// the rows and of the RAM budget); again without the selected bands that hold no valid sample.
template <class Options, class Result>
Result runOnDevices(const CovarianceJob<Options, Result>& job, const Options& options,
                    Feedback& feedback) {
  const auto onDevices = [&](const Options& chosen) -> Result {
    JobGroup alone;
    if (!chosen.device.severalGpus()) return runInGroup(job, chosen, feedback, alone);
    const std::vector<int> gpus = resolveGpus(chosen.device);
    if (gpus.size() == 1) {
      Options one = chosen;
      one.device = DeviceChoice::gpu(gpus[0]);
      return runInGroup(job, one, feedback, alone);
    }
    job.check(chosen);  // once, before any GPU's thread starts
    const int count = static_cast<int>(gpus.size());
    feedback.info(QString("%1 GPUs, one band of rows each").arg(count));
    Result result;
    ThreadGroup threads(count);
    threads.run([&](JobGroup& group) {
      Options mine = chosen;
      mine.device = DeviceChoice::gpu(gpus[group.rank()]);
      mine.ramBytes = std::max<int64_t>(16ll << 20, chosen.ramBytes / count);
      if (group.rank() == 0) {
        result = runInGroup(job, mine, feedback, group);
      } else {
        CancelOnly quiet(feedback);
        runInGroup(job, mine, quiet, group);
      }
    });
    return result;
  };
  try {
    return leavingOutEmptyBands(options, job.name, feedback, onDevices);
  } catch (...) {
    rethrowAsJobError(options.ramBytes);
  }
}

// A share in percent: one decimal, or as many as it takes (up to six) not to read 100.0 below 100.
QString percentText(double percent);

// The checks every covariance job's options pass: the RAM and GPU memory budgets.
void checkCovarianceOptions(const CovarianceOptions& options);

}  // namespace hyperstream
