#include "pca/PcaJob.h"

#include "detect/DetectReport.h"
#include "spectra/SpectralLibrary.h"

#include "core/AddressSpace.h"
#include "core/Error.h"
#include "io/EmptyBands.h"
#include "io/OutputCheck.h"
#include "io/PendingRaster.h"
#include "io/QuickLook.h"
#include "io/SpectralMetadata.h"
#include "mnf/MnfFit.h"
#include "pca/HtmlReport.h"
#include "pca/Report.h"
#include "pca/SavedTransform.h"
#include "pixels/AbundanceSolver.h"
#include "projection/PcaKernels.h"
#include "run/DeviceSelection.h"
#include "run/JobGroup.h"
#include "run/Pipeline.h"
#include "run/StripPlan.h"
#include "spectra/EndmemberTable.h"
#include "stats/NoiseDifferences.h"
#include "stats/PixelSample.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QMutexLocker>
#include <QObject>
#include <QThread>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

namespace hyperstream {

namespace {

// Detection fits the covariance and writes float scores.
void checkDetectOptions(const PcaOptions& options) {
  const OutputType type = options.outputType;
  if (type != OutputType::Float32 && type != OutputType::Float64)
    throw Error("OUTPUT_TYPE", "detection scores are written as Float32 or Float64");
  if (options.noise || options.matrix != MatrixType::Covariance || !options.savedTransform.empty())
    throw Error("METHOD", "detection fits the image's own covariance");
  const int components = options.detector.components;
  if (components < 0 && components != kSignalSubspace && components != kSceneMaterials)
    throw Error("COMPONENTS", "the number of components must be positive (0: all), or auto");
  const double shrinkage = options.detector.shrinkage.value_or(0.0);
  if (!(shrinkage >= 0 && shrinkage < 1))
    throw Error("SHRINKAGE", "the shrinkage is a share of the mean band variance, in [0, 1)");
}

void checkOptions(const PcaOptions& options) {
  if (options.components < kSceneMaterials)
    throw Error("COMPONENTS",
                "the number of components must be positive, 0 (by variance), all or auto");
  if ((options.components == kSignalSubspace || options.components == kSceneMaterials) &&
      !options.savedTransform.empty())
    throw Error("COMPONENTS",
                "auto estimates the signal subspace of a fit: a saved transform has its own count");
  if (!(options.variancePercent > 0.0 && options.variancePercent <= 100.0))
    throw Error("VARIANCE", "the variance threshold must be a percentage in (0, 100]");
  if (options.ramBytes < (16ll << 20))
    throw Error("RAM_MB", "the RAM budget must be at least 16 MiB");
  if (options.gpuMemoryBytes < 0)
    throw Error("GPU_MEMORY_MB", "the GPU memory budget must be positive (0: automatic)");
  if (options.kind == PcaJobKind::Inverse && options.savedTransform.empty())
    throw Error("STATS", "an inverse transform needs the statistics JSON of the fitting run");
  const bool components = options.kind == PcaJobKind::Transform;
  const OutputType type = options.outputType;
  if (components && type != OutputType::Float32 && type != OutputType::Float64 &&
      type != OutputType::Byte)
    throw Error("OUTPUT_TYPE", "components are written as Float32, Float64 or Byte");
  if (options.kind == PcaJobKind::Detect) checkDetectOptions(options);
}

// Creation options for an output that several processes write at once, each its own rows: only
// raw layouts whose blocks never straddle two processes' rows (GeoTIFF strips of one row,
// uncompressed and untiled; ENVI).
std::vector<std::string> sharedWritingOptions(GDALDriver* driver,
                                              std::vector<std::string> creationOptions) {
  const std::string format = driver->GetDescription();
  if (format == "ENVI") return creationOptions;
  if (format != "GTiff")
    throw Error("OUTPUT",
                "under MPI every rank writes its rows into one file, which needs a "
                "GeoTIFF or ENVI output, not " +
                    format);
  for (const std::string& option : creationOptions) {
    const QString text = QString::fromStdString(option).toUpper();
    const bool raw = text.startsWith("COMPRESS=")     ? text == "COMPRESS=NONE"
                     : text.startsWith("TILED=")      ? text == "TILED=NO" || text == "TILED=FALSE"
                     : text.startsWith("BLOCKYSIZE=") ? text == "BLOCKYSIZE=1"
                                                      : true;
    if (!raw)
      throw Error("CREATION_OPTIONS",
                  "'" + option +
                      "' cannot be used under MPI: every rank writes its own rows "
                      "into one file, which needs an uncompressed GeoTIFF in strips of one row");
  }
  creationOptions.push_back("BLOCKYSIZE=1");
  return creationOptions;
}

std::vector<double> packed(const DeviceTimes& t) {
  return {t.upload,
          t.moments,
          t.range,
          t.projection,
          t.download,
          t.spp,
          static_cast<double>(t.uploadBytes),
          static_cast<double>(t.downloadBytes)};
}

// Workers run side by side: each stage took as long as its slowest worker; bytes add up.
DeviceTimes slowest(const std::vector<std::vector<double>>& workers) {
  DeviceTimes t;
  for (const std::vector<double>& w : workers) {
    t.upload = std::max(t.upload, w[0]);
    t.moments = std::max(t.moments, w[1]);
    t.range = std::max(t.range, w[2]);
    t.projection = std::max(t.projection, w[3]);
    t.download = std::max(t.download, w[4]);
    t.spp = std::max(t.spp, w[5]);
    t.uploadBytes += static_cast<int64_t>(w[6]);
    t.downloadBytes += static_cast<int64_t>(w[7]);
  }
  return t;
}

}  // namespace

namespace {

// What component rasters record of the fit that wrote them (default metadata domain).
constexpr const char* kTransformKey = "HYPERSTREAM_TRANSFORM";
constexpr const char* kFitIdKey = "HYPERSTREAM_FIT_ID";
constexpr const char* kByteRangesKey = "HYPERSTREAM_BYTE_RANGES";

// "low minimum:maximum ...", in full precision.
std::string byteRangesText(double low, const std::vector<double>& minimum,
                           const std::vector<double>& maximum) {
  QString text = QString::number(low);
  for (size_t k = 0; k < minimum.size(); ++k)
    text += QString(" %1:%2").arg(minimum[k], 0, 'g', 17).arg(maximum[k], 0, 'g', 17);
  return text.toStdString();
}

// Whether a component raster's record of its Byte ranges is that of the statistics (which may
// hold more components than it has).
bool sameByteRanges(const std::string& recorded, const SavedTransform& saved) {
  const auto count = static_cast<size_t>(std::count(recorded.begin(), recorded.end(), ':'));
  if (count > saved.byteMinimum.size()) return false;
  const auto end = static_cast<int64_t>(count);
  return recorded == byteRangesText(saved.byteLow,
                                    {saved.byteMinimum.begin(), saved.byteMinimum.begin() + end},
                                    {saved.byteMaximum.begin(), saved.byteMaximum.begin() + end});
}

QString percentText(double percent);

// One worker's run of the job (the whole image, or its rows when it is one of several GPUs or
// MPI ranks), as named steps: plan, the moments pass, the fit, the range pass (Byte output only),
// the projection pass, and the reports and commit.
class PcaRun {
 public:
  PcaRun(const PcaOptions& options, const DeviceChoice& device, Feedback& feedback, JobGroup& group)
      : options_(options),
        feedback_(feedback),
        group_(group),
        starting_(device, options.gpuMemoryBytes,
                  {makeCpuPcaKernels, &GpuRuntime::createPcaKernels}) {
    total_.start();
  }

  PcaResult run() {
    openInput();
    checkOutputs();
    startKernels();
    planMemory();
    copyCompressedInput();
    prepareKernels();
    if (saved_) {
      result_.model = saved_->model;
    } else {
      const Moments moments = momentsPass();
      fit(moments);
    }
    chooseComponents();
    OutputEncoding encoding = outputEncoding();
    if (saved_ && rescalesToByte())
      useSavedRanges(encoding);
    else if (rescalesToByte())
      rangePass(encoding);
    projectionPass(encoding);
    return finish();
  }

 private:
  // Components rescaled to 0-255 from their ranges (a rebuilt Byte image is rounded instead).
  bool rescalesToByte() const {
    return options_.kind == PcaJobKind::Transform && options_.outputType == OutputType::Byte;
  }
  bool rebuilds() const {
    return options_.kind == PcaJobKind::Denoise || options_.kind == PcaJobKind::Inverse;
  }
  double pass1End() const { return rescalesToByte() ? 40.0 : 50.0; }
  int bandCount() const { return static_cast<int>(result_.bands.size()); }
  // Bands the output has (at most, for components).
  int outputBands() const {
    return options_.kind == PcaJobKind::Inverse ? static_cast<int>(saved_->bands.size())
                                                : bandCount();
  }

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
  bool isMnf() const { return options_.noise.has_value(); }
  void readSavedTransform();
  void recordFit(GDALDataset& dataset, const OutputEncoding& encoding) const;
  void checkComponentsBelong();
  BandList inputBands();
  void checkSavedBands() const;
  void resolveOutputType();
  Projection inverseProjection() const;
  bool hasDeclaredNodata(double& value) const;
  void useSavedRanges(OutputEncoding& encoding);
  void setByteRescale(const std::vector<double>& minimum, const std::vector<double>& maximum,
                      OutputEncoding& encoding);
  int countComponents() const;
  void chooseComponents();
  void chooseDetector();
  std::vector<Target> selectedTargets() const;
  void estimateSubspace(const Moments& moments);
  // Whether the components are counted by the scene's materials, which need a sample of the
  // pixels from the moments pass.
  bool countsMaterials() const {
    return options_.kind == PcaJobKind::Detect ? options_.detector.components == kSceneMaterials
                                               : options_.components == kSceneMaterials;
  }
  void countSceneMaterials();
  void checkComponentCount() const;
  OutputEncoding outputEncoding();
  QString outputBandDescription(int band) const;
  void rangePass(OutputEncoding& encoding);
  // Where this worker writes its rows: the output it shares, or (MPI ranks but 0) its own handle
  // on rank 0's file.
  struct OutputHandle {
    PendingRaster* shared = nullptr;  // this process's output
    QMutex* lock = nullptr;           // writes one at a time (threads sharing one output)
    DatasetPtr rankOutput;
    std::unique_ptr<RawWriter> rankRaw;  // rankOutput's file taken straight, where it can be
    void write(GDALDataType type, const StripRange& strip, const unsigned char* rows,
               const Feedback& feedback);
  };
  std::unique_ptr<PendingRaster> createOutput(const OutputEncoding& encoding) const;
  OutputHandle openOutput(const OutputEncoding& encoding);
  void projectionPass(const OutputEncoding& encoding);
  PcaResult finish();
  // The report's preview of the written components (none for a rebuilt image).
  ReportViews reportViews();
  DetectionPage detectionPage() const;

  StripView stripView(const StripRange& range, const void* data) const;
  unsigned char* residentStrip(const StripRange& range) const {
    return cube_.get() + (range.row0 - share_.first) * inputRowBytes_;
  }
  const void* readFromFile(const StripRange& range, unsigned char* buffer) {
    unsigned char* target = result_.resident ? residentStrip(range) : buffer;
    if (bandMajor_)
      reader_->readBandMajor(range.row0, range.rows, target);
    else
      reader_->read(range.row0, range.rows, target);
    return target;
  }
  // The later passes' source: the GPU's copy (null), the host's, or the file again (applying a
  // saved transform, the projection is the first pass).
  StripPipeline::Stages::Read readAgainStage() {
    return [this](const StripRange& range, unsigned char* buffer) -> const void* {
      if (result_.deviceResident && !saved_) return nullptr;
      return result_.resident ? residentStrip(range) : readFromFile(range, buffer);
    };
  }
  int inputBuffers() const { return result_.resident ? 0 : kInputBuffers; }
  // Once the kernels hold the cube, the later passes read nothing.
  int laterInputBuffers() const { return result_.deviceResident && !saved_ ? 0 : inputBuffers(); }
  size_t inputStripBytes() const { return static_cast<size_t>(plan_.stripRows * inputRowBytes_); }
  HostAllocator allocator() {
    return [this](size_t bytes) { return kernels_->allocateHost(bytes); };
  }

  const PcaOptions& options_;
  Feedback& feedback_;
  JobGroup& group_;
  QElapsedTimer total_, setup_;
  double selectionSeconds_ = 0;
  KernelStart<PcaKernels> starting_;
  JobInput input_;
  PcaResult result_;
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
  Projection projection_;
  std::optional<SavedTransform> saved_;  // apply
  // MNF: the noise differences of each strip and the kernels that take their moments.
  std::unique_ptr<NoiseDifferences> noise_;
  std::unique_ptr<PcaKernels> noiseKernels_;
  Moments noiseMoments_;
  std::optional<PixelSampler> sampler_;       // countsMaterials(): pass 1 fills it
  std::unique_ptr<PendingRaster> ownOutput_;  // one worker, or MPI rank 0
  PendingRaster* output_ = nullptr;           // the output rank 0 commits
};

// The input, this worker's rows and the output's format.
void PcaRun::openInput() {
  if (!options_.savedTransform.empty()) readSavedTransform();
  try {
    input_ = openJobInput(options_, inputBands(), "PCA", feedback_);
  } catch (const Error& error) {
    // Applying without BANDS reads the bands the transform was fitted on: where the image lacks
    // them, the statistics do not fit it (the user gave no band to blame).
    if (options_.kind != PcaJobKind::Transform || !saved_ || !options_.bands.empty() ||
        error.parameter() != "BANDS")
      throw;
    throw Error("STATS",
                "the saved transform was fitted on " + std::to_string(saved_->bands.size()) +
                    " bands, up to band " +
                    std::to_string(*std::max_element(saved_->bands.begin(), saved_->bands.end())) +
                    ", which this image lacks (" + error.what() +
                    "): give BANDS to choose the image's bands that match");
  }
  if (saved_) checkSavedBands();
  checkComponentCount();
  if (options_.kind == PcaJobKind::Inverse) checkComponentsBelong();
  resolveOutputType();
  const RasterInfo& info = input_.info;
  starting_.weigh({info.width * info.height / group_.size() *
                   static_cast<int64_t>(input_.bands.size()) * typeSize(info.type)});
  result_.input = info;
  if (checkAddressSpace(options_.ramBytes)) result_.input.mappable = false;
  result_.bands = input_.bands;
  result_.totalPixels = info.width * info.height;
  // This process's rows (all of them unless it is one of several MPI ranks).
  share_ = rowShare(group_.rank(), group_.size(), info.height);
  if (share_.count < 1)
    throw Error("MPI", std::to_string(group_.size()) + " processes for an image of " +
                           std::to_string(info.height) + " rows: use at most one per row");
}

// A count beyond the selected bands, refused before the first pass reads the image (constant
// bands, found by that pass, may lower what is available further).
void PcaRun::checkComponentCount() const {
  const auto selected = static_cast<int>(input_.bands.size());
  if (saved_ || options_.components <= selected) return;
  throw Error("COMPONENTS", "asks for " + std::to_string(options_.components) +
                                " components, but only " + std::to_string(selected) +
                                " bands are selected");
}

// The bands to read: those asked for; applying, the saved ones; inverting, the first
// `components` bands of the component raster (all by default).
BandList PcaRun::inputBands() {
  if (!options_.bands.empty()) return options_.bands;
  if (options_.kind == PcaJobKind::Inverse)
    return options_.components > 0 ? BandList{BandRange(1, options_.components)} : BandList{};
  if (saved_) return {saved_->bands.begin(), saved_->bands.end()};
  return {};
}

// The input's bands against the saved transform's: as many as it was fitted on (apply), or its
// first components in order (inverse).
void PcaRun::checkSavedBands() const {
  const size_t selected = input_.bands.size();
  if (options_.kind != PcaJobKind::Inverse) {
    if (selected != saved_->bands.size())
      throw Error("BANDS", std::to_string(selected) +
                               " band(s) selected, but the saved transform was fitted on " +
                               std::to_string(saved_->bands.size()));
    return;
  }
  for (size_t k = 0; k < selected; ++k)
    if (input_.bands[k] != static_cast<int>(k) + 1)
      throw Error("BANDS",
                  "the component raster's bands are taken from the first on, in order "
                  "(band k holds component k)");
  const int components = saved_->model.componentCount();
  if (selected > static_cast<size_t>(components))
    throw Error("INPUT", std::to_string(selected) +
                             " component band(s), but the saved transform has " +
                             std::to_string(components) + " components");
}

// A rebuilt image is written in the type of the image it rebuilds unless asked otherwise.
void PcaRun::resolveOutputType() {
  result_.outputType = options_.outputType;
  if (options_.outputType != OutputType::SameAsInput) return;
  if (options_.kind == PcaJobKind::Denoise) {
    result_.outputType = outputTypeOf(input_.info.type);
  } else {
    const GDALDataType type = GDALGetDataTypeByName(saved_->inputType.c_str());
    if (type == GDT_Unknown)
      throw Error("OUTPUT_TYPE",
                  "the statistics do not say the fitted image's data type (an older run): "
                  "choose Float32 or Float64");
    result_.outputType = outputTypeOf(type);
  }
}

void PcaRun::checkOutputs() {
  std::vector<InputFile> reads = rasterInputFiles("INPUT", result_.input.files);
  if (saved_) reads.push_back(plainInputFile("STATS", options_.savedTransform));
  const std::vector<InputFile>& targets = options_.targetTable.files;  // detection's
  reads.insert(reads.end(), targets.begin(), targets.end());
  OutputCheck outputs(std::move(reads), feedback_);
  outputs.rasterDestination("OUTPUT", options_.output);
  format_ = RasterFormat{outputDriver(options_.output, options_.format), options_.creationOptions};
  // Processes that write their rows into one file need a layout that allows it.
  if (group_.size() > 1 && !group_.inOneProcess())
    format_.creationOptions = sharedWritingOptions(format_.driver, options_.creationOptions);
  outputs.raster("OUTPUT", options_.output, format_, outputBands(), gdalType(result_.outputType));
  if (!options_.statsJson.empty()) outputs.file("OUTPUT_STATS", options_.statsJson);
  if (!options_.tableCsv.empty()) outputs.file("OUTPUT_TABLE", options_.tableCsv);
  if (!options_.htmlReport.empty()) outputs.file("OUTPUT_HTML_FILE", options_.htmlReport);
}

void PcaRun::startKernels() {
  setup_.start();
  kernels_ = starting_.get(feedback_);
  if (!kernels_->advice().empty()) feedback_.info(QString::fromStdString(kernels_->advice()));
}

// A strip pool for each pass, or the whole cube when it fits. Strips hold whole groups of rows
// (see StripView::groupPixels).
void PcaRun::planMemory() {
  const RasterInfo& info = result_.input;
  inputRowBytes_ = info.width * bandCount() * typeSize(info.type);
  const int64_t outputRowBytes =
      info.width * outputBands() * typeSize(gdalType(result_.outputType));
  // MNF on the host: the noise differences of a strip (Int32 or Float64) and their masks.
  const bool hostNoise = isMnf() && !kernels_->takesNoise(input_.sampleType);
  const int64_t differenceBytes = hostNoise ? info.width * bandCount() * 8 + 2 * info.width : 0;
  const int64_t mask = info.width + differenceBytes;
  needs_.firstRow = share_.first;
  needs_.rowsToDo = share_.count;
  needs_.bands = bandCount();
  needs_.streamingRowBytes =
      kInputBuffers * inputRowBytes_ + kOutputBuffers * outputRowBytes + mask;
  needs_.residentRowBytes = kOutputBuffers * outputRowBytes + mask;
  rowsPerGroup_ = groupRows(info.width);
  needs_.rowMultiple = rowsPerGroup_;
  needs_.requestedRows = options_.stripRows;
  // Workers in one process (a thread per GPU) share the cores: each reads with its share.
  needs_.sharing = group_.inOneProcess() ? group_.size() : 1;
  needs_.mayCopyInput = group_.size() == 1;  // the others read their rows of the file
  plan_ = hyperstream::planMemory(info, options_.ramBytes, needs_);
}

void PcaRun::copyCompressedInput() {
  copy_ = decompressIfStreamed(result_.input, result_.bands, options_.ramBytes, needs_,
                               options_.output, plan_, feedback_);
}

// GPU kernels keep the cube in their own memory when it fits there; else the host keeps it when
// it fits the RAM budget. The reader maps what the buffers leave of the budget.
void PcaRun::prepareKernels() {
  const RasterInfo& info = result_.input;
  const RasterInfo& source = copy_ ? copy_->info() : info;
  // Band-major strips: straight from a band-interleaved file, and from any compressed one (GDAL
  // keeps a decompressed block per band).
  bandMajor_ = kernels_->takesBandMajor() && (source.bandInterleaved || source.compressed);
  CubeLayout layout;
  layout.pixels = share_.count * info.width;
  layout.bands = bandCount();
  layout.type = input_.sampleType;
  layout.maxStripPixels = plan_.stripRows * info.width;
  layout.bandMajor = bandMajor_;
  result_.bandMajor = bandMajor_;
  // ACE projects the whitened bands and a filter per target.
  layout.maxComponents =
      std::max(bandCount(), outputBands()) + static_cast<int>(options_.targetTable.targets.size());
  selectionSeconds_ = setup_.nsecsElapsed() * 1e-9;
  setup_.start();
  result_.stripRows = plan_.stripRows;  // as planned, after any copy of the input
  result_.deviceResident = kernels_->prepare(layout);
  // Named once prepared: what they use depends on the cube (integer moments for integer types).
  result_.backend = describeBackends(group_.gatherText(kernels_->name()));
  result_.seconds.setup = selectionSeconds_ + setup_.nsecsElapsed() * 1e-9;
  // Applying a saved transform reads the image once: nothing to keep.
  result_.resident = plan_.cubeFits && !result_.deviceResident && !saved_;
  feedback_.info(QString("%1: %2 x %3 pixels, %4 of %5 bands, %6; %7 strip(s) of %8 rows%9")
                     .arg(QString::fromStdString(options_.input))
                     .arg(info.width)
                     .arg(info.height)
                     .arg(bandCount())
                     .arg(info.bandCount)
                     .arg(GDALGetDataTypeName(info.type))
                     .arg(plan_.strips.size())
                     .arg(plan_.stripRows)
                     .arg(result_.deviceResident
                              ? ", the cube stays in GPU memory between the passes"
                          : result_.resident ? ", the cube stays in memory between the passes"
                                             : ", read once per pass"));
  if (result_.resident) cube_ = kernels_->allocateHost(static_cast<size_t>(plan_.cubeBytes()));
  inputStrips_.emplace(allocator());
  // Read by the reader thread only, in parallel parts, on every core: in pass 1 the CPU kernels'
  // compute waits for it (see StripPipeline); in pass 2 their workers share the cores with it.
  const int64_t bufferBytes = result_.resident
                                  ? plan_.cubeBytes() + plan_.stripRows * needs_.residentRowBytes
                                  : plan_.stripRows * needs_.streamingRowBytes;
  reader_ = std::make_unique<StripReader>(source, copy_ ? copy_->bands() : result_.bands,
                                          plan_.readers, plan_.mappableBytes(bufferBytes), 0);
  if (isMnf()) prepareNoise();
}

// MNF: the kernels take the noise moments themselves when they can (a GPU from the strips it
// holds, the CPU for samples of at most 16 bits with AVX-512 VNNI); else the strips are
// differenced on the host for a second set of CPU kernels. A worker
// that does not start at the image's first row reads the row above its own.
void PcaRun::prepareNoise() {
  const RasterInfo& info = result_.input;
  const NoiseDirection direction = *options_.noise;
  if (kernels_->takesNoise(input_.sampleType)) {
    kernels_->prepareNoise(rowStep(direction), columnStep(direction), info.width);
  } else {
    noise_ = std::make_unique<NoiseDifferences>(direction, info.width, bandCount(),
                                                input_.sampleType, input_.nodata.data());
    noiseKernels_ = makeCpuPcaKernels();
    CubeLayout layout;
    layout.pixels = share_.count * info.width;
    layout.bands = bandCount();
    layout.type = noise_->differenceType();
    layout.maxStripPixels = plan_.stripRows * info.width;
    noiseKernels_->prepare(layout);
  }
  if (share_.first == 0) return;
  std::vector<unsigned char> row(static_cast<size_t>(inputRowBytes_));
  const StripRange above{share_.first - 1, 1};
  if (bandMajor_)
    reader_->readBandMajor(above.row0, 1, row.data());
  else
    reader_->read(above.row0, 1, row.data());
  const StripView view = stripView(above, row.data());
  if (noise_)
    noise_->setRowAbove(view);
  else
    kernels_->setNoiseRowAbove(view);
}

StripView PcaRun::stripView(const StripRange& range, const void* data) const {
  StripView view;
  view.data = data;
  view.type = input_.sampleType;
  view.pixels = range.rows * result_.input.width;
  view.bands = bandCount();
  view.nodata = input_.nodata.data();
  view.groupPixels = rowsPerGroup_ * result_.input.width;
  view.firstPixel = (range.row0 - share_.first) * result_.input.width;
  view.bandMajor = bandMajor_;
  return view;
}

// A pass that writes nothing: `compute` on every strip, timed into `seconds`.
void PcaRun::computePass(int inputBuffers, const StripPipeline::Stages::Read& read,
                         const std::function<void(const StripView&)>& compute, double& seconds,
                         double progressFrom, double progressTo) {
  QElapsedTimer timer;
  StripPipeline pipeline(inputBuffers, inputStripBytes(), 0, 0, kernels_->usesEveryCore(),
                         allocator());
  pipeline.keepInputBuffersIn(*inputStrips_);
  StripPipeline::Stages stages;
  stages.read = read;
  stages.compute = [&](const StripRange& range, const void* data, unsigned char*) {
    timer.start();
    compute(stripView(range, data));
    seconds += timer.nsecsElapsed() * 1e-9;
  };
  pipeline.run(plan_.strips, stages, feedback_, progressFrom, progressTo);
  result_.seconds.read += pipeline.readSeconds();
}

// Pass 1: count, mean and co-moments of the valid pixels, merged over the workers.
Moments PcaRun::momentsPass() {
  const int64_t width = result_.input.width;
  if (countsMaterials()) sampler_.emplace(width * result_.input.height, kMaterialSamplePixels);
  computePass(
      inputBuffers(),
      [this](const StripRange& range, unsigned char* buffer) {
        return readFromFile(range, buffer);
      },
      [this, width](const StripView& strip) {
        kernels_->accumulateMoments(strip);
        if (noise_) noiseKernels_->accumulateMoments(noise_->differences(strip));
        if (sampler_) sampler_->take(strip, share_.first * width);
      },
      result_.seconds.moments, 0.0, pass1End());
  QElapsedTimer timer;
  timer.start();
  Moments moments = group_.mergeMoments(kernels_->takeMoments(bandCount()));
  if (isMnf())
    noiseMoments_ = group_.mergeMoments(noise_ ? noiseKernels_->takeMoments(bandCount())
                                               : kernels_->takeNoiseMoments(bandCount()));
  result_.seconds.moments += timer.nsecsElapsed() * 1e-9;
  if (laterInputBuffers() == 0) inputStrips_->release();  // the kernels hold the cube
  return moments;
}

void PcaRun::fit(const Moments& moments) {
  QElapsedTimer timer;
  timer.start();
  result_.model = isMnf() ? fitMnf(moments, noiseMoments_, result_.warnings)
                          : fitPca(moments, options_.matrix, result_.warnings);
  if (group_.size() > 1) {
    // Every worker fitted the same merged moments, but LAPACK's last bits may differ between
    // machines (CPU kernels, threads): all take rank 0's eigen-decomposition, so that every
    // row is projected by one model.
    PcaModel& model = result_.model;
    std::vector<double> eigen = model.eigenvalues;
    eigen.insert(eigen.end(), model.eigenvectors.begin(), model.eigenvectors.end());
    eigen.insert(eigen.end(), model.inverseLoadings.begin(), model.inverseLoadings.end());
    eigen = group_.shareNumbers(eigen);
    const auto vectors = eigen.begin() + static_cast<int64_t>(model.eigenvalues.size());
    const auto inverse = vectors + static_cast<int64_t>(model.eigenvectors.size());
    model.eigenvalues.assign(eigen.begin(), vectors);
    model.eigenvectors.assign(vectors, inverse);
    model.inverseLoadings.assign(inverse, eigen.end());
  }
  result_.model.id = fitIdentity(result_.model);
  estimateSubspace(moments);
  if (countsMaterials()) countSceneMaterials();
  result_.seconds.eigen = timer.nsecsElapsed() * 1e-9;
  for (const std::string& warning : result_.warnings)
    feedback_.warning(QString::fromStdString(warning));
}

// HySime's dimension and the virtual dimensionality, over the bands the fit used: logged, in
// the reports, and the component count where asked. Workers take rank 0's (LAPACK's last bits
// may differ between machines; the count must not).
void PcaRun::estimateSubspace(const Moments& moments) {
  std::vector<int> used;
  for (int b = 0; b < moments.bands; ++b)
    if (!std::binary_search(result_.model.constantBands.begin(), result_.model.constantBands.end(),
                            b))
      used.push_back(b);
  try {
    SignalSubspace subspace = estimateSignalSubspace(moments, used);
    if (group_.size() > 1) {
      const std::vector<double> shared =
          group_.shareNumbers({static_cast<double>(subspace.dimension),
                               static_cast<double>(subspace.virtualDimensionality[0]),
                               static_cast<double>(subspace.virtualDimensionality[1]),
                               static_cast<double>(subspace.virtualDimensionality[2])});
      subspace.dimension = static_cast<int>(shared[0]);
      for (int t = 0; t < 3; ++t)
        subspace.virtualDimensionality[t] = static_cast<int>(shared[t + 1]);
    }
    result_.subspace = std::move(subspace);
  } catch (const Error& error) {
    if (options_.components == kSignalSubspace) throw Error("COMPONENTS", error.what());
    feedback_.warning(QString("no signal subspace estimate: %1").arg(error.what()));
    return;
  }
  const SignalSubspace& subspace = *result_.subspace;
  feedback_.info(QString("Signal subspace: %1 dimension(s) by HySime; virtual dimensionality "
                         "(HFC) %2 / %3 / %4 at false-alarm rates 1e-3 / 1e-4 / 1e-5")
                     .arg(subspace.dimension)
                     .arg(subspace.virtualDimensionality[0])
                     .arg(subspace.virtualDimensionality[1])
                     .arg(subspace.virtualDimensionality[2]));
}

// The scene's materials (unmixing/MaterialCount.h) from HySime's dimension and the workers'
// samples merged; every worker takes rank 0's count.
void PcaRun::countSceneMaterials() {
  if (!result_.subspace)
    throw Error("COMPONENTS",
                "no signal subspace estimate to count the scene's materials by "
                "(see the warning above): give a number of components");
  PixelSample sample = sampler_->sample();
  if (group_.size() > 1) {
    std::vector<double> mine;
    for (int64_t i = 0; i < sample.size(); ++i) {
      mine.push_back(static_cast<double>(sample.pixels[i]));
      mine.insert(mine.end(), sample.spectrum(i), sample.spectrum(i) + bandCount());
    }
    std::vector<PixelSample> parts;
    for (const std::vector<double>& numbers : group_.gatherNumbers(mine)) {
      PixelSample part;
      part.bands = bandCount();
      for (size_t at = 0; at < numbers.size(); at += 1 + bandCount()) {
        part.pixels.push_back(static_cast<int64_t>(numbers[at]));
        part.values.insert(part.values.end(), numbers.begin() + static_cast<int64_t>(at) + 1,
                           numbers.begin() + static_cast<int64_t>(at) + 1 + bandCount());
      }
      parts.push_back(std::move(part));
    }
    sample = PixelSampler::merged(parts);
  }
  const int most = std::max(1, std::min(kMaxEndmembers, result_.model.componentCount()));
  MaterialCount count = countMaterials(sample, result_.subspace->dimension, most);
  if (group_.size() > 1)
    count.count = static_cast<int>(group_.shareNumbers({static_cast<double>(count.count)})[0]);
  feedback_.info(QString::fromStdString(materialCountText(count, *result_.subspace)));
  result_.materials = std::move(count);
}

// Apply: the saved transform, and a check that this image has the bands it was fitted on.
void PcaRun::readSavedTransform() {
  saved_ = hyperstream::readSavedTransform(options_.savedTransform);
  if (options_.noise || options_.matrix != MatrixType::Covariance)
    throw Error("STATS",
                "a saved transform is applied as it was fitted: no noise direction or "
                "matrix to choose");
}

// Apply, Byte output: the fitting run's ranges, so that the same values get the same bytes.
void PcaRun::useSavedRanges(OutputEncoding& encoding) {
  if (!saved_->hasByteRanges || result_.components > saved_->components)
    throw Error("OUTPUT_TYPE",
                "Byte output needs the ranges of a fitting run that wrote Byte "
                "components (at least " +
                    std::to_string(result_.components) + "): choose Float32 or Float64");
  const auto components = static_cast<size_t>(result_.components);
  encoding.byteLow = saved_->byteLow;
  setByteRescale({saved_->byteMinimum.begin(), saved_->byteMinimum.begin() + components},
                 {saved_->byteMaximum.begin(), saved_->byteMaximum.begin() + components}, encoding);
}

// How many components to write (or rebuild from): by count, all, by SNR (MNF) or by cumulative
// variance; a saved transform's own count unless asked otherwise.
int PcaRun::countComponents() const {
  const PcaModel& model = result_.model;
  const int available = model.componentCount();
  if (saved_ && options_.components == 0) return saved_->components;
  if (options_.components == kAllComponents) return available;
  if (options_.components == kSignalSubspace)
    return std::clamp(result_.subspace->dimension, 1, available);
  if (options_.components == kSceneMaterials)
    return std::clamp(result_.materials->count, 1, available);
  if (options_.components == 0 && options_.minSnr) {
    int reaching = 0;
    while (reaching < available && model.signal(reaching) >= *options_.minSnr) ++reaching;
    if (reaching == 0)
      throw Error("MIN_SNR", QString("no component reaches an SNR of %1 (the largest is %2)")
                                 .arg(*options_.minSnr)
                                 .arg(model.signal(0), 0, 'g', 4)
                                 .toStdString());
    return reaching;
  }
  if (options_.components == 0) return model.componentsForVariance(options_.variancePercent);
  if (options_.components > available)
    throw Error("COMPONENTS", "asks for " + std::to_string(options_.components) +
                                  " components, but there are only " + std::to_string(available) +
                                  " (non-constant selected bands)");
  return options_.components;
}

// The components and the projection that writes them, or rebuilds the image from them.
void PcaRun::chooseComponents() {
  if (options_.kind == PcaJobKind::Detect) return chooseDetector();
  if (options_.kind == PcaJobKind::Inverse) {
    result_.components = bandCount();  // every band of the component raster read
    projection_ = inverseProjection();
    return;
  }
  const PcaModel& model = result_.model;
  const int components = result_.components = countComponents();
  feedback_.info(QString("%1 valid of %2 pixels; %3 component(s) explain %4 % of the %5")
                     .arg(model.validPixels)
                     .arg(result_.totalPixels)
                     .arg(components)
                     .arg(model.cumulativePercent(components - 1), 0, 'f', 2)
                     .arg(isMnf() ? "summed SNR" : "variance"));
  if (rebuilds()) {
    projection_ = model.rebuilding(components);
    return;
  }
  if (options_.outputType == OutputType::Float32)
    for (int k = 0; k < components; ++k)
      if (model.componentBound(k) > std::numeric_limits<float>::max())
        throw Error("OUTPUT_TYPE",
                    QString("PC%1 can reach %2, beyond what Float32 holds (3.4e38): choose "
                            "Float64")
                        .arg(k + 1)
                        .arg(model.componentBound(k), 0, 'g', 3)
                        .toStdString());
  projection_ = model.projection(components);
}

// Detection: the scores' projection from the covariance fit.
void PcaRun::chooseDetector() {
  DetectorOptions chosen = options_.detector;
  chosen.targets = selectedTargets();
  if (chosen.components == kSignalSubspace) {
    if (!result_.subspace)
      throw Error("COMPONENTS", "no signal subspace estimate to score in (see the warning above)");
    chosen.components = std::max(1, result_.subspace->dimension);
  }
  if (chosen.components == kSceneMaterials) chosen.components = result_.materials->count;
  const Detector& detector = result_.detector.emplace(fitDetector(result_.model, chosen));
  result_.components = detector.components;
  projection_ = detector.projection;
  const PcaModel& model = result_.model;
  const QString why = options_.detector.components == kSceneMaterials
                          ? QString(", as many as the scene's materials")
                      : options_.detector.components == kSignalSubspace
                          ? QString(", as many as the signal subspace's dimensions (HySime)")
                          : QString();
  feedback_.info(QString("%1 valid of %2 pixels; %3 over %4 of %5 principal component(s)%8 "
                         "(%6 % of the variance), shrinkage %7")
                     .arg(model.validPixels)
                     .arg(result_.totalPixels)
                     .arg(QString::fromStdString(detectMethodName(chosen.method)).toUpper())
                     .arg(detector.components)
                     .arg(model.componentCount())
                     .arg(percentText(model.cumulativePercent(detector.components - 1)))
                     .arg(detector.epsilon > 0 ? QString("ε = %1").arg(detector.epsilon, 0, 'g', 4)
                                               : QString("none"))
                     .arg(why));
}

// The targets' values in the selected bands: each band's column by its name in the table, or
// (a table whose columns name no band of the image, or are not named) the columns in order, one
// per selected band.
std::vector<Target> PcaRun::selectedTargets() const {
  return targetsForImage(options_.targetTable, result_.input, result_.bands);
}

// Inverting, the component raster's values back to components (undoing a Byte rescale), then
// to the bands: y_k = (value_k - byteLow) / scale_k, x = mean + sum_k (min_k + y_k) restore_k.
Projection PcaRun::inverseProjection() const {
  const PcaModel& model = saved_->model;
  const int components = result_.components;
  Projection projection;
  projection.bands = components;
  projection.components = components;
  projection.center.assign(components, 0.0);
  projection.weights.assign(static_cast<size_t>(components) * components, 0.0);
  projection.outputs = model.bands;
  projection.restore = model.restore(components);
  projection.offset = model.mean;
  const bool fromBytes =
      input_.info.type == GDT_Byte && saved_->hasByteRanges && components <= saved_->components;
  for (int k = 0; k < components; ++k) {
    double weight = 1.0;
    if (fromBytes) {
      const double width = saved_->byteMaximum[k] - saved_->byteMinimum[k];
      weight = width > 0 ? width / (255.0 - saved_->byteLow) : 0.0;
      projection.center[k] = saved_->byteLow;
      for (int b = 0; b < model.bands; ++b)
        projection.offset[b] +=
            saved_->byteMinimum[k] * projection.restore[static_cast<size_t>(k) * model.bands + b];
    }
    projection.weights[static_cast<size_t>(k) * components + k] = weight;
  }
  return projection;
}

// The nodata value the rebuilt image's bands declare: the fitted image's (the first band that has
// one).
bool PcaRun::hasDeclaredNodata(double& value) const {
  const std::vector<double>& nodata =
      options_.kind == PcaJobKind::Inverse ? saved_->nodata : input_.nodata;
  const auto declared =
      std::find_if(nodata.begin(), nodata.end(), [](double v) { return !std::isnan(v); });
  if (declared == nodata.end()) return false;
  value = *declared;
  return true;
}

// Input nodata preserved for float outputs (NaN when the input declares none but has non-finite
// pixels); Byte uses 1-255 and 0 for nodata when some pixels are invalid. Applying a saved
// transform, whether pixels are invalid is known only once projected: the fitting run's choice
// holds (so that the same image gives the same file), and float outputs write NaN for invalid
// pixels when the input declares no nodata.
OutputEncoding PcaRun::outputEncoding() {
  const bool someInvalid =
      saved_ ? saved_->hadOutputNodata : result_.model.validPixels < result_.totalPixels;
  OutputEncoding encoding;
  encoding.type = result_.outputType;
  const bool integer = !GDALDataTypeIsFloating(gdalType(encoding.type));
  if (saved_) encoding.nodata = integer ? 0.0 : std::numeric_limits<double>::quiet_NaN();
  double declared = 0;
  if (rescalesToByte()) {
    result_.hasOutputNodata = someInvalid;
    encoding.nodata = 0;
    encoding.byteLow = someInvalid ? 1.0 : 0.0;
    if (someInvalid) feedback_.info("Byte output: valid pixels rescaled to 1-255, 0 marks nodata");
  } else if (hasDeclaredNodata(declared)) {
    result_.hasOutputNodata = true;
    encoding.nodata = declared;
    encoding.avoidNodata = integer;
  } else if (someInvalid) {
    result_.hasOutputNodata = true;
    encoding.nodata = integer ? 0.0 : std::numeric_limits<double>::quiet_NaN();
    encoding.avoidNodata = integer;
  }
  result_.outputNodata = encoding.nodata;
  return encoding;
}

// Byte output: the components' ranges over the valid pixels, for the rescale.
void PcaRun::rangePass(OutputEncoding& encoding) {
  const int components = result_.components;
  ComponentRange range;
  computePass(
      laterInputBuffers(), readAgainStage(),
      [&](const StripView& strip) { range.merge(kernels_->componentRange(strip, projection_)); },
      result_.seconds.range, pass1End(), 60.0);
  if (range.minimum.empty()) {  // no strip had a valid pixel
    range.minimum.assign(components, std::numeric_limits<double>::infinity());
    range.maximum.assign(components, -std::numeric_limits<double>::infinity());
  }
  range = group_.mergeRanges(range);
  setByteRescale(range.minimum, range.maximum, encoding);
}

// Byte output: each component rescaled from [minimum, maximum] to [byteLow, 255].
void PcaRun::setByteRescale(const std::vector<double>& minimum, const std::vector<double>& maximum,
                            OutputEncoding& encoding) {
  result_.byteMinimum = minimum;
  result_.byteMaximum = maximum;
  const double span = 255.0 - encoding.byteLow;
  for (size_t k = 0; k < minimum.size(); ++k) {
    const double width = maximum[k] - minimum[k];
    encoding.byteMinimum.push_back(minimum[k]);
    encoding.byteScale.push_back(width > 0 ? span / width : 0.0);
  }
}

// A share: one decimal, or as many as it takes (up to six) not to read 100.0 below 100.
QString percentText(double percent) {
  for (int decimals = 1; decimals < 6; ++decimals) {
    QString text = QString::number(percent, 'f', decimals);
    if (percent >= 100 || text.toDouble() < 100) return text;
  }
  return QString::number(percent, 'f', 6);
}

// "PC1 (42.1 %, cum. 42.1 %)", or "MNF1 (SNR 812.3, cum. 61.0 %)"; "99.96 %" rather than a rounded
// 100.0 where the share is below 100.
QString componentDescription(const PcaModel& model, int k) {
  if (model.transform == Transform::Mnf)
    return QString("MNF%1 (SNR %2, cum. %3 %)")
        .arg(k + 1)
        .arg(model.signal(k), 0, 'f', 1)
        .arg(percentText(model.cumulativePercent(k)));
  return QString("PC%1 (%2 %, cum. %3 %)")
      .arg(k + 1)
      .arg(percentText(model.explainedPercent(k)))
      .arg(percentText(model.cumulativePercent(k)));
}

// A component's description, or a rebuilt band's: the description of the band it rebuilds.
QString PcaRun::outputBandDescription(int band) const {
  switch (options_.kind) {
    case PcaJobKind::Transform:
      return componentDescription(result_.model, band);
    case PcaJobKind::Denoise:
      return QString::fromStdString(result_.input.bandDescriptions[result_.bands[band] - 1]);
    case PcaJobKind::Inverse:
      return static_cast<size_t>(band) < saved_->bandDescriptions.size()
                 ? QString::fromStdString(saved_->bandDescriptions[band])
                 : QString();
    case PcaJobKind::Detect:
      return QString::fromStdString(result_.detector->bandNames[band]);
  }
  return {};
}

// The output raster, georeferenced, its bands described and given their nodata value.
std::unique_ptr<PendingRaster> PcaRun::createOutput(const OutputEncoding& encoding) const {
  const int bands = projection_.outputCount();
  auto created =
      createLike(result_.input, options_.output, format_, bands, gdalType(encoding.type));
  GDALDataset& dataset = created->dataset();
  for (int b = 0; b < bands; ++b) {
    GDALRasterBand* band = dataset.GetRasterBand(b + 1);
    const QString description = outputBandDescription(b);
    if (!description.isEmpty()) band->SetDescription(description.toUtf8().constData());
    if (result_.hasOutputNodata) band->SetNoDataValue(encoding.nodata);
  }
  if (options_.kind == PcaJobKind::Transform) recordFit(dataset, encoding);
  if (options_.kind == PcaJobKind::Denoise)
    writeSpectralMetadata(dataset, bandSpectraOf(result_.input.wavelengths, result_.input.fwhm,
                                                 result_.input.goodBands, result_.bands));
  if (options_.kind == PcaJobKind::Inverse) writeSpectralMetadata(dataset, saved_->spectra);
  return created;
}

// Components say which fit wrote them and how they were rescaled to Byte, so that inverting them
// with the statistics of another fit is refused (checkComponentsBelong).
void PcaRun::recordFit(GDALDataset& dataset, const OutputEncoding& encoding) const {
  const PcaModel& model = result_.model;
  dataset.SetMetadataItem(kTransformKey, model.transform == Transform::Mnf ? "mnf" : "pca");
  if (!model.id.empty()) dataset.SetMetadataItem(kFitIdKey, model.id.c_str());
  if (encoding.type == OutputType::Byte)
    dataset.SetMetadataItem(
        kByteRangesKey,
        byteRangesText(encoding.byteLow, result_.byteMinimum, result_.byteMaximum).c_str());
}

// Inverting: the component raster's record of its fit against the statistics.
void PcaRun::checkComponentsBelong() {
  GDALDataset& components = *input_.dataset;
  const PcaModel& model = saved_->model;
  const char* transform = components.GetMetadataItem(kTransformKey);
  const char* id = components.GetMetadataItem(kFitIdKey);
  const char* ranges = components.GetMetadataItem(kByteRangesKey);
  const std::string statsName = model.transform == Transform::Mnf ? "an MNF" : "a PCA";
  if (transform && std::string(transform) != (model.transform == Transform::Mnf ? "mnf" : "pca"))
    throw Error("STATS", "the components were written by " +
                             std::string(EQUAL(transform, "mnf") ? "an MNF" : "a PCA") +
                             ", the statistics are " + statsName +
                             "'s: give the statistics of the run that wrote them");
  if (id && !model.id.empty() && model.id != id)
    throw Error("STATS", "the components were written by another fit (" + std::string(id) +
                             ") than these statistics describe (" + model.id +
                             "): give the statistics of the run that wrote them");
  if (input_.info.type == GDT_Byte) {
    const auto count = static_cast<int>(input_.bands.size());
    if (!saved_->hasByteRanges || count > saved_->components)
      throw Error("STATS",
                  "the components are Byte, rescaled by the run that wrote them, but the "
                  "statistics hold no Byte ranges for " +
                      std::to_string(count) +
                      " of them: give the statistics of the run that wrote these Byte "
                      "components");
    if (ranges && !sameByteRanges(ranges, *saved_))
      throw Error("STATS",
                  "the components were rescaled to Byte with other ranges than these statistics "
                  "hold: give the statistics of the run that wrote them");
  }
  if (!transform && !id)
    feedback_.warning(
        "The components carry no record of the fit that wrote them (an older run, or another "
        "program): nothing shows that they belong to these statistics");
}

// Rank 0 creates the output. Threads on several GPUs share it (writes one at a time); MPI ranks
// each open the file and write their own rows into it.
PcaRun::OutputHandle PcaRun::openOutput(const OutputEncoding& encoding) {
  const bool rankZero = group_.rank() == 0;
  OutputHandle handle;
  if (group_.size() == 1) {
    ownOutput_ = createOutput(encoding);
    output_ = ownOutput_.get();
  } else if (group_.inOneProcess()) {
    output_ = &group_.shareOutput(rankZero ? createOutput(encoding) : nullptr);
    handle.lock = &group_.outputLock();
  } else {
    if (rankZero) {
      ownOutput_ = createOutput(encoding);
      output_ = ownOutput_.get();
      output_->reopen();
    }
    const std::string path = group_.shareText(rankZero ? output_->temporaryPath() : std::string());
    if (!rankZero) {
      handle.rankOutput = openForUpdate(path, "OUTPUT");
      handle.rankRaw = RawWriter::open(*handle.rankOutput, gdalType(encoding.type), path);
    }
  }
  handle.shared = output_;
  return handle;
}

void PcaRun::OutputHandle::write(GDALDataType type, const StripRange& strip,
                                 const unsigned char* rows, const Feedback& feedback) {
  if (rankRaw)
    rankRaw->write(strip.row0, strip.rows, rows, feedback);
  else if (rankOutput)
    writeStrip(*rankOutput, type, strip.row0, strip.rows, rows, feedback);
  else
    shared->write(strip.row0, strip.rows, rows, feedback);
}

// Pass 2: project and write.
void PcaRun::projectionPass(const OutputEncoding& encoding) {
  OutputHandle output = openOutput(encoding);
  const int64_t outputBytes = plan_.stripRows * result_.input.width * projection_.outputCount() *
                              typeSize(gdalType(encoding.type));
  QElapsedTimer timer;
  // Reading the next strip overlaps projecting this one even on the CPU: its workers take the
  // strip's blocks as they free up, so a reader on a core costs only its own time (16 cores:
  // PCA of the 2.09 GB cube 0.90 -> 0.82 s, RX 1.42 -> 1.27 s).
  StripPipeline pipeline(laterInputBuffers(), inputStripBytes(), kOutputBuffers,
                         static_cast<size_t>(outputBytes), false, allocator());
  pipeline.keepInputBuffersIn(*inputStrips_);
  StripPipeline::Stages stages;
  stages.read = readAgainStage();
  stages.compute = [&](const StripRange& strip, const void* data, unsigned char* out) {
    timer.start();
    kernels_->project(stripView(strip, data), projection_, encoding, out);
    result_.seconds.projection += timer.nsecsElapsed() * 1e-9;
  };
  stages.write = [&](const StripRange& strip, const unsigned char* out) {
    const QMutexLocker lock(output.lock);  // none when no other worker shares the output
    output.write(gdalType(encoding.type), strip, out, feedback_);
  };
  pipeline.run(plan_.strips, stages, feedback_, rescalesToByte() ? 60.0 : pass1End(), 100.0);
  result_.seconds.read += pipeline.readSeconds();
  result_.seconds.write += pipeline.writeSeconds();
  inputStrips_.reset();
  cube_.reset();
  input_.dataset.reset();
  if (feedback_.isCanceled()) throw Canceled();
  if (output.rankRaw) output.rankRaw->close();
  if (output.rankOutput) {
    QuietGdalErrors quiet;
    CPLErrorReset();
    output.rankOutput.reset();  // flushes this rank's rows
    if (CPLGetLastErrorType() >= CE_Failure)
      throw Error("OUTPUT", std::string("cannot write rows: ") + CPLGetLastErrorMsg());
  }
}

// The report's previews: the components; for a denoise the input and its rebuilt image, the
// same bands (nearest natural colour) of each.
ReportViews PcaRun::reportViews() {
  output_->dataset().FlushCache();
  ReportViews views;
  if (!rebuilds()) {
    views.components =
        makeQuickLook(output_->dataset(), projection_.outputCount() >= 3 ? std::vector<int>{1, 2, 3}
                                                                         : std::vector<int>{1});
    return views;
  }
  if (options_.kind != PcaJobKind::Denoise) return views;
  const std::vector<int> bands = naturalColourBands(result_.bands, result_.input.wavelengths);
  std::vector<int> positions;  // in the output, which holds the selected bands in order
  positions.reserve(bands.size());
  for (int band : bands)
    positions.push_back(static_cast<int>(
        std::find(result_.bands.begin(), result_.bands.end(), band) - result_.bands.begin() + 1));
  const DatasetPtr input = openRaster(options_.input, "INPUT");
  views.before = makeQuickLook(*input, bands);
  views.after = makeQuickLook(output_->dataset(), positions);
  // What was removed: over at most 16 bands spread over the selection (each a read of both
  // images at preview size).
  const auto selected = static_cast<int>(result_.bands.size());
  const int spread = std::min(16, selected);
  std::vector<int> inputBands, outputBands;
  for (int k = 0; k < spread; ++k) {
    const int position = k * selected / spread;
    inputBands.push_back(result_.bands[position]);
    outputBands.push_back(position + 1);
  }
  views.residual = makeDifferenceQuickLook(*input, inputBands, output_->dataset(), outputBands);
  views.residualBands = spread;
  return views;
}

// A detection run's report: the detector, its statistics and targets.
DetectionPage PcaRun::detectionPage() const {
  const Detector& detector = *result_.detector;
  DetectionPage page;
  page.heading = detectorTitle(options_.detector.method);
  page.input = result_.input;
  page.bands = result_.bands;
  page.validPixels = result_.model.validPixels;
  page.facts = {
      {QObject::tr("Output"), QString::fromStdString(options_.output)},
      {QObject::tr("Statistics"),
       QObject::tr("the image's mean and covariance, in %1 principal component(s)%2")
           .arg(detector.components)
           .arg(detector.epsilon > 0 ? QObject::tr("; C + εI, ε = %1").arg(detector.epsilon)
                                     : QString())},
      {QObject::tr("Device"), QString::fromStdString(result_.backend)},
      {QObject::tr("Seconds"), QString::number(total_.nsecsElapsed() * 1e-9, 'f', 2)}};
  if (options_.detector.method != DetectMethod::Rx) {
    page.targets = targetsForImage(options_.targetTable, result_.input, result_.bands);
    page.absorption = options_.detector.absorption;
    page.mean = result_.model.mean;
  }
  return page;
}

// Every worker's rows are in the file: rank 0 writes the reports and moves the output into place.
PcaResult PcaRun::finish() {
  // The device stages took as long as the slowest worker.
  result_.seconds.device = slowest(group_.gatherNumbers(packed(kernels_->deviceTimes())));
  result_.seconds.total = total_.nsecsElapsed() * 1e-9;
  if (group_.rank() != 0) {
    group_.synchronize();  // rank 0 has moved it into place
    result_.seconds.total = total_.nsecsElapsed() * 1e-9;
    return result_;
  }
  if (!options_.statsJson.empty()) writeStatsJson(result_, options_, options_.statsJson);
  if (!options_.tableCsv.empty()) writeTableCsv(result_, options_.tableCsv);
  if (!options_.htmlReport.empty()) {
    if (options_.kind == PcaJobKind::Detect)
      writeDetectionReport(detectionPage(), output_->dataset(), options_.htmlReport);
    else
      writeHtmlReport(result_, options_, options_.htmlReport, reportViews());
  }
  output_->commit();
  group_.synchronize();
  result_.seconds.total = total_.nsecsElapsed() * 1e-9;
  return result_;
}

}  // namespace

// The whole job, on the CPU or on the device given.
static PcaResult runPcaOn(const PcaOptions& options, const DeviceChoice& device, Feedback& feedback,
                          JobGroup& group) {
  return PcaRun(options, device, feedback, group).run();
}

// One thread per GPU, each with its share of the rows and of the RAM budget.
static PcaResult runPcaOnGpus(const PcaOptions& options, const std::vector<int>& gpus,
                              Feedback& feedback) {
  const int count = static_cast<int>(gpus.size());
  feedback.info(QString("%1 GPUs, one band of rows each").arg(count));
  PcaResult result;
  ThreadGroup threads(count);
  threads.run([&](JobGroup& group) {
    PcaOptions mine = options;
    mine.device = DeviceChoice::gpu(gpus[group.rank()]);
    mine.ramBytes = std::max<int64_t>(16ll << 20, options.ramBytes / count);
    if (group.rank() == 0) {
      result = runPca(mine, feedback, group);
    } else {
      CancelOnly quiet(feedback);
      runPca(mine, quiet, group);
    }
  });
  return result;
}

static PcaResult runPcaOnDevices(const PcaOptions& options, Feedback& feedback) {
  JobGroup alone;
  if (!options.device.severalGpus()) return runPca(options, feedback, alone);
  const std::vector<int> gpus = resolveGpus(options.device);
  if (gpus.size() > 1) {
    checkOptions(options);  // once, before any GPU's thread starts
    return runPcaOnGpus(options, gpus, feedback);
  }
  PcaOptions one = options;
  one.device = DeviceChoice::gpu(gpus[0]);
  return runPca(one, feedback, alone);
}

static PcaResult runPcaInGroup(const PcaOptions& options, Feedback& feedback, JobGroup& group) {
  checkOptions(options);
  if (group.size() > 1) {
    // No rerun on the CPU: every rank would have to start again.
    try {
      return runPcaOn(options, options.device, feedback, group);
    } catch (const DeviceError& e) {
      throw Error("DEVICE", std::string("the GPU failed: ") + e.what() +
                                "; a job shared by several GPUs or MPI ranks is not rerun on the "
                                "CPU (device cpu does that)");
    }
  }
  return retryingOnTheCpu(options.device, feedback, [&](const DeviceChoice& device) {
    return runPcaOn(options, device, feedback, group);
  });
}

PcaResult runPca(const PcaOptions& options, Feedback& feedback) {
  try {
    return leavingOutEmptyBands(options, "PCA", feedback, [&](const PcaOptions& chosen) {
      return runPcaOnDevices(chosen, feedback);
    });
  } catch (...) {
    rethrowAsJobError(options.ramBytes);
  }
}

PcaResult runPca(const PcaOptions& options, Feedback& feedback, JobGroup& group) {
  try {
    return runPcaInGroup(options, feedback, group);
  } catch (...) {
    rethrowAsJobError(options.ramBytes);
  }
}

}  // namespace hyperstream
