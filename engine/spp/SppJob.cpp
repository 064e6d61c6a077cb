#include "spp/SppJob.h"

#include "core/AddressSpace.h"
#include "core/Error.h"
#include "core/Samples.h"
#include "io/OutputCheck.h"
#include "io/PendingRaster.h"
#include "run/DeviceSelection.h"
#include "run/Pipeline.h"
#include "spp/CpuSpp.h"
#include "spp/SppKernels.h"

#include <QElapsedTimer>
#include <QThread>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <thread>

namespace hyperstream {

namespace {

constexpr int kInputBuffers = 3;
constexpr int kOutputBuffers = 2;
// Strips no larger than this (as for PCA): smaller strips made the GeoTIFF writer, which scatters
// each strip over every band, twice as slow on a 2300 x 2300 x 198 cube.
constexpr int64_t kMaxStripBytes = 64ll << 20;

}  // namespace

// The whole job, on the CPU or on the device the options ask for.
static SppResult runSppOn(const SppOptions& options, const DeviceChoice& device,
                          Feedback& feedback) {
  QElapsedTimer total;
  total.start();
  if (options.window < 3 || options.window > 15 || options.window % 2 == 0)
    throw Error("WINDOW", "the window must be odd, from 3 to 15 pixels (" +
                              std::to_string(options.window) + " given)");
  if (options.outputType == OutputType::Byte)
    throw Error("OUTPUT_TYPE", "SPP writes Float32 or Float64");
  if (options.ramBytes < (16ll << 20))
    throw Error("RAM_MB", "the RAM budget must be at least 16 MiB");
  SppResult result;
  // The kernels start while the input is opened, the outputs checked and the job planned.
  KernelStart<SppKernels> starting(device, 0, {makeCpuSppKernels, &GpuRuntime::createSppKernels});
  JobInput input = openJobInput(options.input, options.bands, "SPP");
  // A window 5 pixels wide is about as much work per byte as PCA's; it grows with the window's
  // area.
  starting.weigh({input.info.width * input.info.height * static_cast<int64_t>(input.bands.size()) *
                      typeSize(input.info.type),
                  options.window * options.window / 25.0});
  result.input = input.info;
  if (checkAddressSpace(options.ramBytes)) result.input.mappable = false;
  result.bands = input.bands;
  const RasterInfo& info = result.input;
  const int bands = static_cast<int>(result.bands.size());
  const std::vector<double>& nodata = input.nodata;
  const GDALDataType outputType =
      options.outputType == OutputType::Float64 ? GDT_Float64 : GDT_Float32;
  const RasterFormat format{outputDriver(options.output, options.format), options.creationOptions};
  {
    OutputCheck outputs(info.files, feedback);
    outputs.raster("OUTPUT", options.output, format, bands, outputType);
    if (!options.alphaOutput.empty())
      outputs.raster("OUTPUT_ALPHA", options.alphaOutput, format, 1, GDT_Float32);
    if (!options.rhoOutput.empty())
      outputs.raster("OUTPUT_RHO", options.rhoOutput, format, 1, GDT_Float32);
  }

  // Memory plan: per strip row the input in its type (a pool of buffers), the CPU's working memory
  // (unit vectors and angles), and the outputs; the window's halo rows come on top of each strip.
  const int halo = options.window / 2;
  const int sampleSize = typeSize(info.type);
  const int outputSize = typeSize(outputType);
  const int64_t inputRowBytes = info.width * bands * sampleSize;
  const int64_t outputRowBytes = info.width * (bands * int64_t{outputSize} + int64_t{8});
  const int64_t perRow = kInputBuffers * inputRowBytes +
                         CpuSpp::bytesPerRow(info.width, bands, options.window) +
                         kOutputBuffers * outputRowBytes;
  const int64_t budget = options.ramBytes - std::min<int64_t>(64ll << 20, options.ramBytes / 4);
  // A strip comes with the halo rows the image has around it: a whole image of few rows has none.
  const int64_t haloRows = std::min<int64_t>(int64_t{2} * halo, info.height - 1);
  int64_t stripRows = budget / perRow >= info.height ? info.height : budget / perRow - haloRows;
  stripRows = std::min({stripRows, kMaxStripBytes / std::max<int64_t>(1, inputRowBytes),
                        // at least four strips, so that computing one overlaps writing another
                        std::max<int64_t>(1, (info.height + 3) / 4)});
  if (options.stripRows > 0) stripRows = std::min(options.stripRows, info.height);
  if (stripRows < 1)
    throw Error("RAM_MB", "the RAM budget is too small for one strip of image rows and its " +
                              std::to_string(haloRows) + " halo rows (" +
                              std::to_string((perRow * (1 + haloRows) >> 20) + 1) +
                              " MiB for the image data alone)");
  result.stripRows = stripRows;
  // Rows in memory for one strip: the strip and its halo.
  const int64_t blockRows = std::min(stripRows + int64_t{2} * halo, info.height);
  // The cube stays in memory between the passes when it fits beside pass 2's other buffers.
  const int64_t cubeBytes = info.height * inputRowBytes;
  result.resident = cubeBytes + blockRows * (perRow - kInputBuffers * inputRowBytes) <= budget;
  const std::vector<StripRange> strips = planStrips(info.height, stripRows);
  const std::unique_ptr<SppKernels> kernelsOwner = starting.get(feedback);
  SppKernels& kernels = *kernelsOwner;
  result.backend = kernels.name();
  feedback.info(QString("%1: %2 x %3 pixels, %4 bands; window %5 (%6 border), %7 strip(s) of %8 "
                        "rows%9 on %10")
                    .arg(QString::fromStdString(options.input))
                    .arg(info.width)
                    .arg(info.height)
                    .arg(bands)
                    .arg(options.window)
                    .arg(options.border == SppBorder::Mirror ? "mirror" : "truncate")
                    .arg(strips.size())
                    .arg(stripRows)
                    .arg(result.resident ? " (the cube stays in memory between the passes)" : "")
                    .arg(QString::fromStdString(result.backend)));
  // The reader may map as much of the file as the buffers leave of the budget.
  const int64_t bufferBytes = (result.resident ? cubeBytes : 0) + blockRows * perRow;
  StripReader reader(info, result.bands, std::max(1, QThread::idealThreadCount()),
                     std::max<int64_t>(0, budget - bufferBytes));

  HostMemory cube(nullptr, [](unsigned char*) {});
  if (result.resident) cube = kernels.allocateHost(static_cast<size_t>(cubeBytes));

  // Pass 1: the centroid c of the valid pixels, summed in pixel order (the same for any strips).
  std::vector<double> sum(bands, 0.0);
  int64_t count = 0;
  double largest = 0;  // |value| over the valid pixels
  {
    StripPipeline pipeline(result.resident ? 0 : kInputBuffers,
                           static_cast<size_t>(stripRows * inputRowBytes), 0, 0, false);
    StripPipeline::Stages stages;
    stages.read = [&](const StripRange& range, unsigned char* buffer) -> const void* {
      unsigned char* target = result.resident ? cube.get() + range.row0 * inputRowBytes : buffer;
      reader.read(range.row0, range.rows, target);
      return target;
    };
    stages.compute = [&](const StripRange& range, const void* data, unsigned char*) {
      withSampleType(input.sampleType, [&](auto sample) {
        using T = decltype(sample);
        const ValidPixel<T> isValid(nodata.data(), bands);
        const T* pixel = static_cast<const T*>(data);
        for (int64_t p = 0; p < range.rows * info.width; ++p, pixel += bands) {
          if (!validSpectrum(pixel, bands, isValid)) continue;
          ++count;
          for (int b = 0; b < bands; ++b) {
            const auto value = static_cast<double>(pixel[b]);
            sum[b] += value;
            largest = std::max(largest, std::abs(value));
          }
        }
      });
    };
    pipeline.run(strips, stages, feedback, 0.0, 20.0);
  }
  if (count == 0)
    throw Error("INPUT", "the input has no valid pixel (finite, not nodata, non-zero)");
  result.validPixels = count;
  result.centroid.resize(bands);
  for (int b = 0; b < bands; ++b) result.centroid[b] = sum[b] / static_cast<double>(count);
  // Values near float64's limit overflow the sums; beyond Float32's, they become infinities in
  // a Float32 output (y' lies within |y| + 2|c| <= 3 x the largest value).
  const std::string largestText = QString::number(largest, 'g', 3).toStdString();
  if (!std::all_of(result.centroid.begin(), result.centroid.end(),
                   [](double v) { return std::isfinite(v); }) ||
      largest > std::numeric_limits<double>::max() / 3)
    throw Error("INPUT", "values up to " + largestText +
                             " are too large for float64 sums: mark them as nodata or rescale "
                             "the input");
  if (outputType == GDT_Float32 && 3 * largest > std::numeric_limits<float>::max())
    throw Error("OUTPUT_TYPE", "values up to " + largestText +
                                   " may move beyond what Float32 holds (3.4e38): choose Float64");
  const std::vector<double>& c = result.centroid;

  // Invalid pixels: the input's nodata where it declares one, NaN otherwise.
  const auto declared =
      std::find_if(nodata.begin(), nodata.end(), [](double v) { return !std::isnan(v); });
  const double outputNodata =
      declared != nodata.end() ? *declared : std::numeric_limits<double>::quiet_NaN();
  const float nan = std::numeric_limits<float>::quiet_NaN();

  // Pass 2: strips with their halo rows in, displaced spectra, alpha and rho out.
  auto create = [&](const std::string& path, int count, GDALDataType type, double noValue) {
    auto raster =
        std::make_unique<PendingRaster>(path, format, info.width, info.height, count, type);
    GDALDataset& dataset = raster->dataset();
    if (info.hasGeoTransform)
      dataset.SetGeoTransform(const_cast<double*>(info.geoTransform.data()));
    if (!info.crsWkt.empty()) dataset.SetProjection(info.crsWkt.c_str());
    for (int b = 1; b <= count; ++b) dataset.GetRasterBand(b)->SetNoDataValue(noValue);
    return raster;
  };
  const std::unique_ptr<PendingRaster> output =
      create(options.output, bands, outputType, outputNodata);
  for (int b = 0; b < bands; ++b)
    if (!info.bandDescriptions[result.bands[b] - 1].empty())
      output->dataset().GetRasterBand(b + 1)->SetDescription(
          info.bandDescriptions[result.bands[b] - 1].c_str());
  std::unique_ptr<PendingRaster> alphaRaster, rhoRaster;
  if (!options.alphaOutput.empty()) alphaRaster = create(options.alphaOutput, 1, GDT_Float32, nan);
  if (!options.rhoOutput.empty()) rhoRaster = create(options.rhoOutput, 1, GDT_Float32, nan);

  const int64_t outputCubeBytes = stripRows * info.width * bands * outputSize;
  double alphaSum = 0;
  {
    StripPipeline pipeline(result.resident ? 0 : kInputBuffers,
                           static_cast<size_t>(blockRows * inputRowBytes), kOutputBuffers,
                           static_cast<size_t>(stripRows * outputRowBytes), kernels.usesEveryCore(),
                           [&](size_t bytes) { return kernels.allocateHost(bytes); });
    StripPipeline::Stages stages;
    auto haloRange = [&](const StripRange& range) {
      const int64_t first = std::max<int64_t>(0, range.row0 - halo);
      return StripRange{first, std::min(info.height, range.row0 + range.rows + halo) - first};
    };
    stages.read = [&](const StripRange& range, unsigned char* buffer) -> const void* {
      const StripRange rows = haloRange(range);
      if (result.resident) return cube.get() + rows.row0 * inputRowBytes;
      reader.read(rows.row0, rows.rows, buffer);
      return buffer;
    };
    stages.compute = [&](const StripRange& range, const void* data, unsigned char* out) {
      const StripRange rows = haloRange(range);
      SppStrip strip;
      strip.data = data;
      strip.type = input.sampleType;
      strip.bands = bands;
      strip.nodata = nodata.data();
      strip.width = info.width;
      strip.height = info.height;
      strip.blockRow0 = rows.row0;
      strip.blockRows = rows.rows;
      strip.row0 = range.row0;
      strip.rows = range.rows;
      strip.halo = halo;
      strip.mirror = options.border == SppBorder::Mirror;
      strip.centroid = c.data();
      strip.outputType = options.outputType;
      strip.outputNodata = outputNodata;
      auto* alpha = reinterpret_cast<float*>(out + outputCubeBytes);
      alphaSum += kernels.spatialPreprocess(strip, {out, alpha, alpha + range.rows * info.width});
    };
    stages.write = [&](const StripRange& range, const unsigned char* out) {
      writeStrip(output->dataset(), outputType, range.row0, range.rows, out, feedback);
      const auto* alphaOut = out + outputCubeBytes;
      if (alphaRaster)
        writeStrip(alphaRaster->dataset(), GDT_Float32, range.row0, range.rows, alphaOut, feedback);
      if (rhoRaster)
        writeStrip(rhoRaster->dataset(), GDT_Float32, range.row0, range.rows,
                   alphaOut + range.rows * info.width * 4, feedback);
    };
    pipeline.run(strips, stages, feedback, 20.0, 100.0);
  }
  input.dataset.reset();
  if (feedback.isCanceled()) throw Canceled();
  result.meanAlpha = alphaSum / static_cast<double>(count);
  result.device = kernels.deviceTimes();
  output->commit();
  if (alphaRaster) alphaRaster->commit();
  if (rhoRaster) rhoRaster->commit();
  result.seconds = total.nsecsElapsed() * 1e-9;
  return result;
}

static SppResult runSppOnDevice(const SppOptions& options, Feedback& feedback) {
  if (options.device.severalGpus())
    throw Error("DEVICE", "SPP runs on one device: auto, cpu, gpu or gpu:N (several GPUs, '" +
                              options.device.text() + "', are for PCA)");
  return retryingOnTheCpu(options.device, feedback, [&](const DeviceChoice& device) {
    return runSppOn(options, device, feedback);
  });
}

SppResult runSpp(const SppOptions& options, Feedback& feedback) {
  try {
    return runSppOnDevice(options, feedback);
  } catch (...) {
    rethrowAsJobError(options.ramBytes);
  }
}

}  // namespace hyperstream
