#include "pca/PcaJob.h"

#include "core/AddressSpace.h"
#include "core/Error.h"
#include "io/OutputCheck.h"
#include "io/PendingRaster.h"
#include "pca/HtmlReport.h"
#include "pca/PcaKernels.h"
#include "pca/Report.h"
#include "run/DeviceSelection.h"
#include "run/JobGroup.h"
#include "run/Pipeline.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QThread>

#include <algorithm>
#include <cmath>
#include <limits>

namespace hyperstream {

namespace {

// Bytes of the RAM budget kept aside for everything but strip buffers (BLAS blocks, GDAL,
// bookkeeping): a quarter, at most 64 MiB.
int64_t reserveBytes(int64_t ramBytes) {
  return std::min<int64_t>(64ll << 20, ramBytes / 4);
}
// Strips no larger than this: larger ones gain no speed and make cancel slower.
constexpr int64_t kMaxStripBytes = 64ll << 20;
constexpr int kInputBuffers = 3;   // one being read, one queued, one being computed
constexpr int kOutputBuffers = 2;  // one being filled, one being written

void checkOptions(const PcaOptions& options) {
  if (options.components < kAllComponents)
    throw Error("COMPONENTS", "the number of components must be positive, 0 (by variance) or all");
  if (!(options.variancePercent > 0.0 && options.variancePercent <= 100.0))
    throw Error("VARIANCE", "the variance threshold must be a percentage in (0, 100]");
  if (options.ramBytes < (16ll << 20))
    throw Error("RAM_MB", "the RAM budget must be at least 16 MiB");
  if (options.gpuMemoryBytes < 0)
    throw Error("GPU_MEMORY_MB", "the GPU memory budget must be positive (0: automatic)");
}

// `rows` capped so that a strip stays below kMaxStripBytes and the rows to do, rounded down to a
// multiple of the file's block height when that is possible.
int64_t rowsFitting(int64_t rows, int64_t inputRowBytes, const RasterInfo& info, int64_t rowsToDo) {
  rows = std::min({rows, kMaxStripBytes / std::max<int64_t>(1, inputRowBytes), rowsToDo});
  if (rows < rowsToDo && rows >= info.blockHeight && info.blockHeight > 1)
    rows -= rows % info.blockHeight;
  return rows;
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

// "gpu 0 (...)" for one worker; "gpu 0 (...) + gpu 1 (...)"; "3 x cpu (...)" when all alike.
std::string describeBackends(const std::vector<std::string>& names) {
  if (names.size() == 1) return names[0];
  if (std::all_of(names.begin(), names.end(), [&](const std::string& n) { return n == names[0]; }))
    return std::to_string(names.size()) + " x " + names[0];
  std::string joined;
  for (const std::string& name : names) joined += (joined.empty() ? "" : " + ") + name;
  return joined;
}

}  // namespace

// The whole job, on the CPU or on the device the options ask for.
static PcaResult runPcaOn(const PcaOptions& options, const DeviceChoice& device, Feedback& feedback,
                          JobGroup& group) {
  QElapsedTimer total;
  total.start();
  PcaResult result;
  // The kernels start while the input is opened, the outputs checked and the job planned.
  KernelStart<PcaKernels> starting(device, options.gpuMemoryBytes,
                                   {makeCpuPcaKernels, &GpuRuntime::createPcaKernels});
  JobInput input = openJobInput(options.input, options.bands, "PCA");
  starting.weigh({input.info.width * input.info.height / group.size() *
                  static_cast<int64_t>(input.bands.size()) * typeSize(input.info.type)});
  result.input = input.info;
  if (checkAddressSpace(options.ramBytes)) result.input.mappable = false;
  result.bands = input.bands;
  const RasterInfo& info = result.input;
  const std::vector<int>& bands = result.bands;
  const int bandCount = static_cast<int>(bands.size());
  const std::vector<double>& nodata = input.nodata;
  // This process's rows (all of them unless it is one of several MPI ranks).
  const RowShare share = rowShare(group.rank(), group.size(), info.height);
  if (share.count < 1)
    throw Error("MPI", std::to_string(group.size()) + " processes for an image of " +
                           std::to_string(info.height) + " rows: use at most one per row");
  const bool rankZero = group.rank() == 0, shared = group.size() > 1;
  // Processes that write their rows into one file need a layout that allows it.
  RasterFormat format{outputDriver(options.output, options.format), options.creationOptions};
  if (shared && !group.inOneProcess())
    format.creationOptions = sharedWritingOptions(format.driver, options.creationOptions);
  {
    OutputCheck outputs(info.files, feedback);
    outputs.raster("OUTPUT", options.output, format, bandCount, gdalType(options.outputType));
    if (!options.statsJson.empty()) outputs.file("OUTPUT_STATS", options.statsJson);
    if (!options.tableCsv.empty()) outputs.file("OUTPUT_TABLE", options.tableCsv);
    if (!options.htmlReport.empty()) outputs.file("OUTPUT_HTML_FILE", options.htmlReport);
  }
  result.totalPixels = info.width * info.height;
  QElapsedTimer setup;
  setup.start();
  const std::unique_ptr<PcaKernels> kernelsOwner = starting.get(feedback);
  PcaKernels& kernels = *kernelsOwner;
  result.backend = describeBackends(group.gatherText(kernels.name()));
  if (!kernels.advice().empty()) feedback.info(QString::fromStdString(kernels.advice()));

  // Memory plan: a strip pool for each pass, or the whole cube when it fits.
  const int sampleSize = typeSize(info.type);
  const int outputSize = typeSize(gdalType(options.outputType));
  const int64_t inputRowBytes = info.width * bandCount * sampleSize;
  const int64_t maskRowBytes = info.width;
  // An eighth of the budget (at most 128 MiB per reader handle) is kept for the reader's mapping
  // of the file; the rest, less a reserve, holds strip buffers, and the mapping may also use what
  // they leave.
  // Workers in one process (a thread per GPU) share the cores: each reads with its share.
  const int sharing = group.inOneProcess() ? group.size() : 1;
  const int readers = std::max(1, QThread::idealThreadCount() / sharing);
  const int64_t mappedPerReader = std::min<int64_t>(128ll << 20, options.ramBytes / 8 / readers);
  const int64_t budget =
      options.ramBytes - reserveBytes(options.ramBytes) - readers * mappedPerReader;
  const int64_t cubeBytes = inputRowBytes * share.count;
  // Pass 2 writes at most one component per band.
  const int64_t outputRowBytes = info.width * bandCount * outputSize;
  const int64_t streamingRowBytes =
      kInputBuffers * inputRowBytes + kOutputBuffers * outputRowBytes + maskRowBytes;
  const int64_t residentRowBytes = kOutputBuffers * outputRowBytes + maskRowBytes;
  int64_t stripRows = rowsFitting(budget / streamingRowBytes, inputRowBytes, info, share.count);
  if (stripRows < 1)
    throw Error("RAM_MB", "the RAM budget is too small for one strip of image rows (" +
                              std::to_string((streamingRowBytes >> 20) + 1) + " MiB needed)");
  // With a tight budget (a small RAM_MB, or one GPU's share of it when several run) strips of that
  // height can leave the reader too little to map the file, and GDAL's block cache reads several
  // times slower (StripReader). Then take the tallest strips, half as tall as planned, a row per
  // reader and a block at least, that leave it room for three strips: reopening, which unmaps,
  // then comes every other strip or so. Files that cannot be mapped keep their strips, and so do
  // band-interleaved files that would need far shorter ones (their map holds a 2 MiB folio per
  // band whatever the strip's height).
  auto mappingRoom = [&](int64_t rows) {
    return readers * mappedPerReader + budget - rows * streamingRowBytes;
  };
  auto mappingNeeded = [&](int64_t rows) {
    return StripReader::mappingNeeded(rows, inputRowBytes, bandCount, info.bandInterleaved,
                                      readers);
  };
  if (info.mappable && mappingRoom(stripRows) < mappingNeeded(stripRows)) {
    int64_t rows = stripRows;
    auto roomy = [&](int64_t r) {
      return mappingRoom(r) >= mappingNeeded(r) + 2 * r * inputRowBytes;
    };
    const int64_t fewest = std::max<int64_t>({readers, info.blockHeight, (stripRows + 1) / 2});
    while (rows > fewest && !roomy(rows)) --rows;
    if (roomy(rows)) stripRows = rowsFitting(rows, inputRowBytes, info, share.count);
  }
  // The cube stays in memory when it fits beside the output buffers of a strip of that height.
  const bool fitsInRam = cubeBytes + stripRows * residentRowBytes <= budget;
  if (options.stripRows > 0) stripRows = std::min(options.stripRows, share.count);
  // Strips hold whole groups of rows (see StripView::groupPixels).
  const int64_t rowsPerGroup = groupRows(info.width);
  if (stripRows < share.count)
    stripRows = std::max(rowsPerGroup, stripRows - stripRows % rowsPerGroup);
  result.stripRows = stripRows;
  // GPU kernels keep the cube in their own memory when it fits there; else the host keeps it
  // when it fits the RAM budget.
  CubeLayout layout;
  layout.pixels = share.count * info.width;
  layout.bands = bandCount;
  layout.type = input.sampleType;
  layout.maxStripPixels = stripRows * info.width;
  layout.maxComponents = bandCount;
  const double selection = setup.nsecsElapsed() * 1e-9;
  setup.start();
  result.deviceResident = kernels.prepare(layout);
  result.seconds.setup = selection + setup.nsecsElapsed() * 1e-9;
  result.resident = fitsInRam && !result.deviceResident;
  const std::vector<StripRange> strips = planStrips(share.count, stripRows, share.first);
  feedback.info(QString("%1: %2 x %3 pixels, %4 of %5 bands, %6; %7 strip(s) of %8 rows%9")
                    .arg(QString::fromStdString(options.input))
                    .arg(info.width)
                    .arg(info.height)
                    .arg(bandCount)
                    .arg(info.bandCount)
                    .arg(GDALGetDataTypeName(info.type))
                    .arg(strips.size())
                    .arg(stripRows)
                    .arg(result.deviceResident ? ", the cube stays in GPU memory between the passes"
                         : result.resident     ? ", the cube stays in memory between the passes"
                                               : ", read once per pass"));

  HostMemory cube(nullptr, [](unsigned char*) {});
  if (result.resident) cube = kernels.allocateHost(static_cast<size_t>(cubeBytes));
  const HostAllocator allocate = [&](size_t bytes) { return kernels.allocateHost(bytes); };
  auto residentStrip = [&](const StripRange& range) {
    return cube.get() + (range.row0 - share.first) * inputRowBytes;
  };
  auto stripView = [&](const StripRange& range, const void* data) {
    StripView view;
    view.data = data;
    view.type = input.sampleType;
    view.pixels = range.rows * info.width;
    view.bands = bandCount;
    view.nodata = nodata.data();
    view.groupPixels = rowsPerGroup * info.width;
    view.firstPixel = (range.row0 - share.first) * info.width;
    return view;
  };
  // Read by the reader thread only, in parallel parts; the CPU kernels' compute never runs at
  // the same time (see StripPipeline), so reading may use every core.
  const int64_t bufferBytes =
      result.resident ? cubeBytes + stripRows * residentRowBytes : stripRows * streamingRowBytes;
  StripReader reader(info, bands, readers,
                     readers * mappedPerReader + std::max<int64_t>(0, budget - bufferBytes));
  auto readFromFile = [&](const StripRange& range, unsigned char* buffer) -> const void* {
    unsigned char* target = result.resident ? residentStrip(range) : buffer;
    reader.read(range.row0, range.rows, target);
    return target;
  };
  const int inputBuffers = result.resident ? 0 : kInputBuffers;
  // Once the backend holds the cube, the later passes read nothing.
  const int laterInputBuffers = result.deviceResident ? 0 : inputBuffers;
  const size_t inputBytes = static_cast<size_t>(stripRows * inputRowBytes);

  // Pass 1: statistics.
  const bool byteOutput = options.outputType == OutputType::Byte;
  const double pass1End = byteOutput ? 40.0 : 50.0;
  Moments moments;
  {
    QElapsedTimer timer;
    StripPipeline pipeline(inputBuffers, inputBytes, 0, 0, kernels.usesEveryCore(), allocate);
    StripPipeline::Stages stages;
    stages.read = readFromFile;
    stages.compute = [&](const StripRange& range, const void* data, unsigned char*) {
      timer.start();
      kernels.accumulateMoments(stripView(range, data));
      result.seconds.moments += timer.nsecsElapsed() * 1e-9;
    };
    pipeline.run(strips, stages, feedback, 0.0, pass1End);
    result.seconds.read += pipeline.readSeconds();
    timer.start();
    moments = group.mergeMoments(kernels.takeMoments(bandCount));
    result.seconds.moments += timer.nsecsElapsed() * 1e-9;
  }

  // The fit.
  {
    QElapsedTimer timer;
    timer.start();
    result.model = fitPca(moments, options.matrix, result.warnings);
    if (shared) {
      // Every worker fitted the same merged moments, but LAPACK's last bits may differ between
      // machines (CPU kernels, threads): all take rank 0's eigen-decomposition, so that every
      // row is projected by one model.
      PcaModel& model = result.model;
      std::vector<double> eigen = model.eigenvalues;
      eigen.insert(eigen.end(), model.eigenvectors.begin(), model.eigenvectors.end());
      eigen = group.shareNumbers(eigen);
      const auto split = eigen.begin() + static_cast<int64_t>(model.eigenvalues.size());
      model.eigenvalues.assign(eigen.begin(), split);
      model.eigenvectors.assign(split, eigen.end());
    }
    result.seconds.eigen = timer.nsecsElapsed() * 1e-9;
  }
  for (const std::string& warning : result.warnings)
    feedback.warning(QString::fromStdString(warning));
  const PcaModel& model = result.model;
  const int available = model.componentCount();
  if (options.components == kAllComponents) {
    result.components = available;
  } else if (options.components == 0) {
    result.components = model.componentsForVariance(options.variancePercent);
  } else if (options.components > available) {
    throw Error("COMPONENTS", "asks for " + std::to_string(options.components) +
                                  " components, but there are only " + std::to_string(available) +
                                  " (non-constant selected bands)");
  } else {
    result.components = options.components;
  }
  const int components = result.components;
  feedback.info(QString("%1 valid of %2 pixels; %3 component(s) explain %4 % of the variance")
                    .arg(model.validPixels)
                    .arg(result.totalPixels)
                    .arg(components)
                    .arg(model.cumulativePercent(components - 1), 0, 'f', 2));
  if (options.outputType == OutputType::Float32)
    for (int k = 0; k < components; ++k)
      if (model.componentBound(k) > std::numeric_limits<float>::max())
        throw Error("OUTPUT_TYPE",
                    QString("PC%1 can reach %2, beyond what Float32 holds (3.4e38): choose "
                            "Float64")
                        .arg(k + 1)
                        .arg(model.componentBound(k), 0, 'g', 3)
                        .toStdString());
  const Projection projection = model.projection(components);
  const bool someInvalid = model.validPixels < result.totalPixels;
  const auto sourcePass = [&](const StripRange& range, unsigned char* buffer) -> const void* {
    if (result.deviceResident) return nullptr;
    return result.resident ? residentStrip(range) : readFromFile(range, buffer);
  };

  // Output encoding: input nodata preserved for float outputs (NaN when the input declares none
  // but has non-finite pixels); Byte uses 1-255 and 0 for nodata when some pixels are invalid.
  OutputEncoding encoding;
  encoding.type = options.outputType;
  result.outputType = options.outputType;
  const auto declared =
      std::find_if(nodata.begin(), nodata.end(), [](double v) { return !std::isnan(v); });
  if (byteOutput) {
    result.hasOutputNodata = someInvalid;
    encoding.nodata = 0;
    encoding.byteLow = someInvalid ? 1.0 : 0.0;
    if (someInvalid) feedback.info("Byte output: valid pixels rescaled to 1-255, 0 marks nodata");
  } else if (declared != nodata.end()) {
    result.hasOutputNodata = true;
    encoding.nodata = *declared;
  } else if (someInvalid) {
    result.hasOutputNodata = true;
    encoding.nodata = std::numeric_limits<double>::quiet_NaN();
  }
  result.outputNodata = encoding.nodata;

  // Byte rescale: the components' ranges over the valid pixels first.
  if (byteOutput) {
    ComponentRange range;
    QElapsedTimer timer;
    StripPipeline pipeline(laterInputBuffers, inputBytes, 0, 0, kernels.usesEveryCore(), allocate);
    StripPipeline::Stages stages;
    stages.read = sourcePass;
    stages.compute = [&](const StripRange& strip, const void* data, unsigned char*) {
      timer.start();
      range.merge(kernels.componentRange(stripView(strip, data), projection));
      result.seconds.range += timer.nsecsElapsed() * 1e-9;
    };
    pipeline.run(strips, stages, feedback, pass1End, 60.0);
    result.seconds.read += pipeline.readSeconds();
    if (range.minimum.empty()) {  // no strip had a valid pixel
      range.minimum.assign(components, std::numeric_limits<double>::infinity());
      range.maximum.assign(components, -std::numeric_limits<double>::infinity());
    }
    range = group.mergeRanges(range);
    result.byteMinimum = range.minimum;
    result.byteMaximum = range.maximum;
    const double span = 255.0 - encoding.byteLow;
    for (int k = 0; k < components; ++k) {
      const double width = range.maximum[k] - range.minimum[k];
      encoding.byteMinimum.push_back(range.minimum[k]);
      encoding.byteScale.push_back(width > 0 ? span / width : 0.0);
    }
  }

  // Pass 2: project and write. Rank 0 creates the output. Threads on several GPUs share it
  // (writes one at a time); MPI ranks each open the file and write their own rows into it.
  auto createOutput = [&] {
    auto created = std::make_unique<PendingRaster>(options.output, format, info.width, info.height,
                                                   components, gdalType(encoding.type));
    GDALDataset& dataset = created->dataset();
    if (info.hasGeoTransform)
      dataset.SetGeoTransform(const_cast<double*>(info.geoTransform.data()));
    if (!info.crsWkt.empty()) dataset.SetProjection(info.crsWkt.c_str());
    for (int k = 0; k < components; ++k) {
      GDALRasterBand* band = dataset.GetRasterBand(k + 1);
      band->SetDescription(QString("PC%1 (%2 %, cum. %3 %)")
                               .arg(k + 1)
                               .arg(model.explainedPercent(k), 0, 'f', 1)
                               .arg(model.cumulativePercent(k), 0, 'f', 1)
                               .toUtf8()
                               .constData());
      if (result.hasOutputNodata) band->SetNoDataValue(encoding.nodata);
    }
    return created;
  };
  std::unique_ptr<PendingRaster> ownOutput;  // one worker, or MPI rank 0
  PendingRaster* output = nullptr;           // the output rank 0 commits
  DatasetPtr rankOutput;                     // MPI ranks but 0: their handle on the file
  GDALDataset* dataset = nullptr;
  QMutex* outputLock = nullptr;
  if (!shared) {
    ownOutput = createOutput();
    output = ownOutput.get();
  } else if (group.inOneProcess()) {
    output = &group.shareOutput(rankZero ? createOutput() : nullptr);
    outputLock = &group.outputLock();
  } else {
    if (rankZero) {
      ownOutput = createOutput();
      output = ownOutput.get();
      output->reopen();
    }
    const std::string path = group.shareText(rankZero ? output->temporaryPath() : std::string());
    if (!rankZero) rankOutput = openForUpdate(path, "OUTPUT");
  }
  dataset = rankOutput ? rankOutput.get() : &output->dataset();
  {
    const int64_t outputBytes = stripRows * info.width * components * outputSize;
    QElapsedTimer timer;
    StripPipeline pipeline(laterInputBuffers, inputBytes, kOutputBuffers,
                           static_cast<size_t>(outputBytes), kernels.usesEveryCore(), allocate);
    StripPipeline::Stages stages;
    stages.read = sourcePass;
    stages.compute = [&](const StripRange& strip, const void* data, unsigned char* out) {
      timer.start();
      kernels.project(stripView(strip, data), projection, encoding, out);
      result.seconds.projection += timer.nsecsElapsed() * 1e-9;
    };
    stages.write = [&](const StripRange& strip, const unsigned char* out) {
      std::unique_ptr<QMutexLocker> lock;
      if (outputLock) lock = std::make_unique<QMutexLocker>(outputLock);
      writeStrip(*dataset, gdalType(encoding.type), strip.row0, strip.rows, out, feedback);
    };
    pipeline.run(strips, stages, feedback, byteOutput ? 60.0 : pass1End, 100.0);
    result.seconds.read += pipeline.readSeconds();
    result.seconds.write += pipeline.writeSeconds();
  }
  cube.reset();
  input.dataset.reset();
  if (feedback.isCanceled()) throw Canceled();
  if (rankOutput) {
    QuietGdalErrors quiet;
    CPLErrorReset();
    rankOutput.reset();  // flushes this rank's rows
    if (CPLGetLastErrorType() >= CE_Failure)
      throw Error("OUTPUT", std::string("cannot write rows: ") + CPLGetLastErrorMsg());
  }
  // Every worker's rows are in the file; the device stages took as long as the slowest worker.
  result.seconds.device = slowest(group.gatherNumbers(packed(kernels.deviceTimes())));
  if (!rankZero) {
    group.synchronize();  // rank 0 has moved it into place
    result.seconds.total = total.nsecsElapsed() * 1e-9;
    return result;
  }
  result.seconds.total = total.nsecsElapsed() * 1e-9;
  if (!options.statsJson.empty()) writeStatsJson(result, options, options.statsJson);
  if (!options.tableCsv.empty()) writeTableCsv(result, options.tableCsv);
  if (!options.htmlReport.empty()) writeHtmlReport(result, options, options.htmlReport);
  output->commit();
  group.synchronize();
  result.seconds.total = total.nsecsElapsed() * 1e-9;
  return result;
}

// Forwards cancel only: the other GPUs' threads of a job on several GPUs report nothing.
class CancelOnly : public Feedback {
 public:
  explicit CancelOnly(Feedback& feedback) : feedback_(feedback) {}
  void setProgress(double) override {}
  void log(Level, const QString&) override {}
  bool isCanceled() const override { return feedback_.isCanceled(); }

 private:
  Feedback& feedback_;
};

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
    return runPcaOnDevices(options, feedback);
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
