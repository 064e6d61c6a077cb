#include "covariance/CovarianceRun.h"

#include "core/AddressSpace.h"
#include "pixels/AbundanceSolver.h"

#include <QMutexLocker>

#include <algorithm>
#include <cmath>
#include <limits>

namespace hyperstream {

QString percentText(double percent) {
  for (int decimals = 1; decimals < 6; ++decimals) {
    QString text = QString::number(percent, 'f', decimals);
    if (percent >= 100 || text.toDouble() < 100) return text;
  }
  return QString::number(percent, 'f', 6);
}

void checkCovarianceOptions(const CovarianceOptions& options) {
  if (options.ramBytes < (16ll << 20))
    throw Error("RAM_MB", "the RAM budget must be at least 16 MiB");
  if (options.gpuMemoryBytes < 0)
    throw Error("GPU_MEMORY_MB", "the GPU memory budget must be positive (0: automatic)");
}

// Where this worker writes its rows: the output it shares, or (MPI ranks but 0) its own handle on
// rank 0's file.
struct CovarianceRun::OutputHandle {
  PendingRaster* shared = nullptr;  // this process's output
  QMutex* lock = nullptr;           // writes one at a time (threads sharing one output)
  DatasetPtr rankOutput;
  std::unique_ptr<RawWriter> rankRaw;  // rankOutput's file taken straight, where it can be
  void write(GDALDataType type, const StripRange& strip, const unsigned char* rows,
             const Feedback& feedback) {
    if (rankRaw)
      rankRaw->write(strip.row0, strip.rows, rows, feedback);
    else if (rankOutput)
      writeStrip(*rankOutput, type, strip.row0, strip.rows, rows, feedback);
    else
      shared->write(strip.row0, strip.rows, rows, feedback);
  }
};

CovarianceRun::CovarianceRun(const CovarianceOptions& options, const DeviceChoice& device,
                             Feedback& feedback, JobGroup& group)
    : options_(options),
      feedback_(feedback),
      group_(group),
      starting_(device, options.gpuMemoryBytes,
                {makeCpuPcaKernels, &GpuRuntime::createPcaKernels}) {
  total_.start();
}

CovarianceRun::~CovarianceRun() = default;

CovarianceResult CovarianceRun::runSteps() {
  openInput();
  checkOutputs();
  startKernels();
  planMemory();
  copyCompressedInput();
  prepareKernels();
  if (const PcaModel* given = givenModel())
    result_.model = *given;
  else
    fit(momentsPass());
  choose();
  projectionPass(encode());
  return finish();
}

void CovarianceRun::openImage() {
  input_ = openJobInput(options_, inputBands(), "PCA", feedback_);
}

// The input, this worker's rows and the output's format.
void CovarianceRun::openInput() {
  openImage();
  checkInput();
  result_.noise = noise();
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

void CovarianceRun::checkOutputs() {
  std::vector<InputFile> reads = rasterInputFiles("INPUT", result_.input.files);
  const std::vector<InputFile> others = otherInputs();
  reads.insert(reads.end(), others.begin(), others.end());
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

void CovarianceRun::startKernels() {
  setup_.start();
  kernels_ = starting_.get(feedback_);
  if (!kernels_->advice().empty()) feedback_.info(QString::fromStdString(kernels_->advice()));
}

// A strip pool for each pass, or the whole cube when it fits. Strips hold whole groups of rows
// (see StripView::groupPixels).
void CovarianceRun::planMemory() {
  const RasterInfo& info = result_.input;
  inputRowBytes_ = info.width * bandCount() * typeSize(info.type);
  const int64_t outputRowBytes =
      info.width * outputBands() * typeSize(gdalType(result_.outputType));
  // MNF on the host: the noise differences of a strip (Int32 or Float64) and their masks.
  const bool hostNoise = result_.noise && !kernels_->takesNoise(input_.sampleType);
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

void CovarianceRun::copyCompressedInput() {
  copy_ = decompressIfStreamed(result_.input, result_.bands, options_.ramBytes, needs_,
                               options_.output, plan_, feedback_);
}

// GPU kernels keep the cube in their own memory when it fits there; else the host keeps it when
// it fits the RAM budget. The reader maps what the buffers leave of the budget.
void CovarianceRun::prepareKernels() {
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
  layout.maxComponents = std::max(bandCount(), outputBands()) + extraProjections();
  selectionSeconds_ = setup_.nsecsElapsed() * 1e-9;
  setup_.start();
  result_.stripRows = plan_.stripRows;  // as planned, after any copy of the input
  result_.deviceResident = kernels_->prepare(layout);
  // Named once prepared: what they use depends on the cube (integer moments for integer types).
  result_.backend = describeBackends(group_.gatherText(kernels_->name()));
  result_.seconds.setup = selectionSeconds_ + setup_.nsecsElapsed() * 1e-9;
  // Applying a saved transform reads the image once: nothing to keep.
  result_.resident = plan_.cubeFits && !result_.deviceResident && !givenModel();
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
  if (result_.noise) prepareNoise();
}

// MNF: the kernels take the noise moments themselves when they can (a GPU from the strips it
// holds, the CPU for samples of at most 16 bits with AVX-512 VNNI); else the strips are
// differenced on the host for a second set of CPU kernels. A worker that does not start at the
// image's first row reads the row above its own.
void CovarianceRun::prepareNoise() {
  const RasterInfo& info = result_.input;
  const NoiseDirection direction = *result_.noise;
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

StripView CovarianceRun::stripView(const StripRange& range, const void* data) const {
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

unsigned char* CovarianceRun::residentStrip(const StripRange& range) const {
  return cube_.get() + (range.row0 - share_.first) * inputRowBytes_;
}

const void* CovarianceRun::readFromFile(const StripRange& range, unsigned char* buffer) {
  unsigned char* target = result_.resident ? residentStrip(range) : buffer;
  if (bandMajor_)
    reader_->readBandMajor(range.row0, range.rows, target);
  else
    reader_->read(range.row0, range.rows, target);
  return target;
}

StripPipeline::Stages::Read CovarianceRun::readAgainStage() {
  return [this](const StripRange& range, unsigned char* buffer) -> const void* {
    if (result_.deviceResident && !givenModel()) return nullptr;
    return result_.resident ? residentStrip(range) : readFromFile(range, buffer);
  };
}

int CovarianceRun::inputBuffers() const {
  return result_.resident ? 0 : kInputBuffers;
}

int CovarianceRun::laterInputBuffers() const {
  return result_.deviceResident && !givenModel() ? 0 : inputBuffers();
}

size_t CovarianceRun::inputStripBytes() const {
  return static_cast<size_t>(plan_.stripRows * inputRowBytes_);
}

HostAllocator CovarianceRun::allocator() {
  return [this](size_t bytes) { return kernels_->allocateHost(bytes); };
}

// A pass that writes nothing: `compute` on every strip, timed into `seconds`.
void CovarianceRun::computePass(int inputBuffers, const StripPipeline::Stages::Read& read,
                                const std::function<void(const StripView&)>& compute,
                                double& seconds, double progressFrom, double progressTo) {
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
Moments CovarianceRun::momentsPass() {
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
      result_.seconds.moments, 0.0, momentsProgressEnd());
  QElapsedTimer timer;
  timer.start();
  Moments moments = group_.mergeMoments(kernels_->takeMoments(bandCount()));
  if (result_.noise)
    noiseMoments_ = group_.mergeMoments(noise_ ? noiseKernels_->takeMoments(bandCount())
                                               : kernels_->takeNoiseMoments(bandCount()));
  result_.seconds.moments += timer.nsecsElapsed() * 1e-9;
  if (laterInputBuffers() == 0) inputStrips_->release();  // the kernels hold the cube
  return moments;
}

void CovarianceRun::fit(const Moments& moments) {
  QElapsedTimer timer;
  timer.start();
  result_.model = fitModel(moments, noiseMoments_);
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
void CovarianceRun::estimateSubspace(const Moments& moments) {
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
    if (needsSubspace()) throw Error("COMPONENTS", error.what());
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

// The scene's materials (materials/MaterialCount.h) from HySime's dimension and the workers'
// samples merged; every worker takes rank 0's count.
void CovarianceRun::countSceneMaterials() {
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

int CovarianceRun::countedComponents(int asked) const {
  const int available = result_.model.componentCount();
  if (asked == kAllComponents) return available;
  if (asked == kSignalSubspace) return std::clamp(result_.subspace->dimension, 1, available);
  if (asked == kSceneMaterials) return std::clamp(result_.materials->count, 1, available);
  return asked;
}

void CovarianceRun::setPlainNodata(OutputEncoding& encoding, const std::vector<double>& nodata,
                                   bool someInvalid) {
  const bool integer = !GDALDataTypeIsFloating(gdalType(encoding.type));
  const auto declared =
      std::find_if(nodata.begin(), nodata.end(), [](double v) { return !std::isnan(v); });
  if (declared != nodata.end()) {
    result_.hasOutputNodata = true;
    encoding.nodata = *declared;
    encoding.avoidNodata = integer;
  } else if (someInvalid) {
    result_.hasOutputNodata = true;
    encoding.nodata = integer ? 0.0 : std::numeric_limits<double>::quiet_NaN();
    encoding.avoidNodata = integer;
  }
  result_.outputNodata = encoding.nodata;
}

ComponentRange CovarianceRun::rangesPass(double progressFrom, double progressTo) {
  ComponentRange range;
  computePass(
      laterInputBuffers(), readAgainStage(),
      [&](const StripView& strip) { range.merge(kernels_->componentRange(strip, projection_)); },
      result_.seconds.range, progressFrom, progressTo);
  if (range.minimum.empty()) {  // no strip had a valid pixel
    range.minimum.assign(result_.components, std::numeric_limits<double>::infinity());
    range.maximum.assign(result_.components, -std::numeric_limits<double>::infinity());
  }
  return group_.mergeRanges(range);
}

// The output raster, georeferenced, its bands described and given their nodata value.
std::unique_ptr<PendingRaster> CovarianceRun::createOutput(const OutputEncoding& encoding) const {
  const int bands = projection_.outputCount();
  auto created =
      createLike(result_.input, options_.output, format_, bands, gdalType(encoding.type));
  GDALDataset& dataset = created->dataset();
  for (int b = 0; b < bands; ++b) {
    GDALRasterBand* band = dataset.GetRasterBand(b + 1);
    const QString description = bandDescription(b);
    if (!description.isEmpty()) band->SetDescription(description.toUtf8().constData());
    if (result_.hasOutputNodata) band->SetNoDataValue(encoding.nodata);
  }
  describeOutput(dataset, encoding);
  return created;
}

// Rank 0 creates the output. Threads on several GPUs share it (writes one at a time); MPI ranks
// each open the file and write their own rows into it.
CovarianceRun::OutputHandle CovarianceRun::openOutput(const OutputEncoding& encoding) {
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

// Pass 2: project and write.
void CovarianceRun::projectionPass(const OutputEncoding& encoding) {
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
  pipeline.run(plan_.strips, stages, feedback_, projectionProgressStart(), 100.0);
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

// Every worker's rows are in the file: rank 0 writes the reports and moves the output into place.
CovarianceResult CovarianceRun::finish() {
  result_.seconds.device = slowestWorker(group_, kernels_->deviceTimes());
  result_.seconds.total = elapsedSeconds();
  if (group_.rank() != 0) {
    group_.synchronize();  // rank 0 has moved it into place
    result_.seconds.total = elapsedSeconds();
    return result_;
  }
  writeReports();
  output_->commit();
  group_.synchronize();
  result_.seconds.total = elapsedSeconds();
  return result_;
}

}  // namespace hyperstream
