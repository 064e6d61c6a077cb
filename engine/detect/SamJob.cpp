#include "detect/SamJob.h"

#include "core/AddressSpace.h"
#include "core/Error.h"
#include "detect/SamReport.h"
#include "io/EmptyBands.h"
#include "io/OutputCheck.h"
#include "io/PendingRaster.h"
#include "io/TextFile.h"
#include "pixels/JobStrips.h"
#include "pixels/PixelKernels.h"
#include "run/DeviceSelection.h"
#include "run/Pipeline.h"
#include "run/StripPlan.h"

#include <QElapsedTimer>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

namespace hyperstream {

namespace {

constexpr int kMostSpectra = 65535;  // classes of a UInt16 map, 0 kept for none

}  // namespace

// The class map's colours: ColorBrewer's "Paired", then hues a golden angle apart.
GDALColorEntry classColour(int k) {
  static constexpr unsigned char kPalette[][3] = {
      {31, 120, 180},  {51, 160, 44},   {227, 26, 28},   {255, 127, 0},
      {106, 61, 154},  {177, 89, 40},   {166, 206, 227}, {178, 223, 138},
      {251, 154, 153}, {253, 191, 111}, {202, 178, 214}, {255, 255, 153}};
  constexpr int kColours = sizeof kPalette / sizeof kPalette[0];
  if (k < kColours) return {kPalette[k][0], kPalette[k][1], kPalette[k][2], 255};
  const double hue = std::fmod(k * 137.508, 360.0) / 60.0;
  const double x = 1 - std::abs(std::fmod(hue, 2.0) - 1);
  const int sector = static_cast<int>(hue);
  const double rgb[6][3] = {{1, x, 0}, {x, 1, 0}, {0, 1, x}, {0, x, 1}, {x, 0, 1}, {1, 0, x}};
  const auto level = [](double v) { return static_cast<short>(40 + 190 * v); };
  return {level(rgb[sector][0]), level(rgb[sector][1]), level(rgb[sector][2]), 255};
}

namespace {

class SamRun {
 public:
  SamRun(const SamOptions& options, const DeviceChoice& device, Feedback& feedback)
      : options_(options),
        feedback_(feedback),
        starting_(device, 0, {makeCpuPixelKernels, &GpuRuntime::createPixelKernels}) {
    total_.start();
  }

  SamResult run() {
    openInput();
    readLibrary();
    checkOutputs();
    planMemory();
    startKernels();
    createOutputs();
    classifyPass();
    return finish();
  }

 private:
  int bandCount() const { return static_cast<int>(result_.bands.size()); }
  int spectra() const { return library_.spectra; }
  GDALDataType angleType() const { return gdalType(options_.outputType); }
  void openInput();
  void readLibrary();
  void checkOutputs();
  void planMemory();
  void startKernels();
  void createOutputs();
  void classifyPass();
  void countClasses(const uint16_t* classes, const void* bestAngles, int64_t pixels);
  SamResult finish();

  const SamOptions& options_;
  Feedback& feedback_;
  QElapsedTimer total_;
  KernelStart<PixelKernels> starting_;
  JobInput input_;
  SamResult result_;
  AngleLibrary library_;
  std::vector<InputFile> libraryFiles_;  // every file the library was read from
  RasterFormat format_, angleFormat_, anglesFormat_;
  StreamedInput streamed_;
  int64_t inputRowBytes_ = 0, classRowBytes_ = 0, angleRowBytes_ = 0, anglesRowBytes_ = 0;
  std::unique_ptr<PixelKernels> kernels_;
  std::unique_ptr<PendingRaster> classes_, angle_, angles_;
};

void SamRun::openInput() {
  input_ = openJobInput(options_, options_.bands, "spectral angles", feedback_);
  const RasterInfo& info = input_.info;
  starting_.weigh(
      {info.width * info.height * static_cast<int64_t>(input_.bands.size()) * typeSize(info.type),
       1.0});
  result_.input = info;
  if (checkAddressSpace(options_.ramBytes)) result_.input.mappable = false;
  result_.bands = input_.bands;
}

// The library on the selected bands, each spectrum scaled to norm 1.
void SamRun::readLibrary() {
  const SpectralLibrary library = readSpectralLibrary(options_.library);
  libraryFiles_ = library.files;
  result_.libraryFormat = library.format;
  result_.library = libraryOnBands(library, result_.input, result_.bands);
  if (result_.library.size() > static_cast<size_t>(kMostSpectra))
    throw Error("LIBRARY", "the library holds " + std::to_string(result_.library.size()) +
                               " spectra: at most " + std::to_string(kMostSpectra));
  library_.bands = bandCount();
  library_.spectra = static_cast<int>(result_.library.size());
  library_.maxAngle = options_.maxAngle;
  library_.type = options_.outputType;
  for (const Target& spectrum : result_.library) {
    double norm = 0;
    for (const double v : spectrum.spectrum) norm += v * v;
    norm = std::sqrt(norm);
    if (!(norm > 0) || !std::isfinite(norm))
      throw Error("LIBRARY", "'" + spectrum.name +
                                 "' is zero (or not finite) on the selected "
                                 "bands: it has no direction to compare with");
    for (const double v : spectrum.spectrum) library_.units.push_back(v / norm);
  }
}

void SamRun::checkOutputs() {
  std::vector<InputFile> reads = rasterInputFiles("INPUT", result_.input.files);
  reads.push_back(plainInputFile("LIBRARY", options_.library.library));
  reads.insert(reads.end(), libraryFiles_.begin(), libraryFiles_.end());  // all of its files
  OutputCheck outputs(std::move(reads), feedback_);
  outputs.rasterDestination("OUTPUT", options_.output);
  format_ = RasterFormat{outputDriver(options_.output, options_.format), options_.creationOptions};
  outputs.raster("OUTPUT", options_.output, format_, 1, GDT_UInt16);
  if (!options_.angleOutput.empty()) {
    outputs.rasterDestination("OUTPUT_ANGLE", options_.angleOutput);
    angleFormat_ = formatBeside(format_, "OUTPUT_ANGLE", options_.angleOutput, options_.format);
    outputs.raster("OUTPUT_ANGLE", options_.angleOutput, angleFormat_, 1, angleType());
  }
  if (!options_.anglesOutput.empty()) {
    outputs.rasterDestination("OUTPUT_ANGLES", options_.anglesOutput);
    anglesFormat_ = formatBeside(format_, "OUTPUT_ANGLES", options_.anglesOutput, options_.format);
    outputs.raster("OUTPUT_ANGLES", options_.anglesOutput, anglesFormat_, spectra(), angleType());
  }
  if (!options_.countsCsv.empty()) outputs.file("OUTPUT_COUNTS", options_.countsCsv);
  if (!options_.htmlReport.empty()) outputs.file("OUTPUT_HTML_FILE", options_.htmlReport);
}

// Per buffered row: the input (a pool of buffers) and the outputs (two buffers): classes, the
// best angle and, when asked for, every angle.
void SamRun::planMemory() {
  const RasterInfo& info = result_.input;
  const int size = typeSize(angleType());
  inputRowBytes_ = info.width * bandCount() * typeSize(info.type);
  classRowBytes_ = info.width * 2;
  angleRowBytes_ = info.width * size;
  anglesRowBytes_ = options_.anglesOutput.empty() ? 0 : info.width * spectra() * size;
  OnePassShape shape;
  shape.rows = info.height;
  shape.inputBuffers = kInputBuffers;
  shape.outputBuffers = kOutputBuffers;
  shape.outputRowBytes = classRowBytes_ + angleRowBytes_ + anglesRowBytes_;
  shape.requestedRows = options_.stripRows;
  streamed_ =
      streamOnePass(info, result_.bands, shape, options_.ramBytes, options_.output, feedback_);
}

void SamRun::startKernels() {
  kernels_ = starting_.get(feedback_);
  result_.backend = kernels_->name();
  const RasterInfo& info = result_.input;
  CubeLayout layout;
  layout.bands = bandCount();
  layout.type = input_.sampleType;
  layout.maxStripPixels = streamed_.plan.stripRows * info.width;
  kernels_->prepare(layout);  // one pass: nothing to keep
  feedback_.info(QString("%1: %2 x %3 pixels, %4 bands; %5 spectra (%6)%7; %8 strip(s) of %9 "
                         "rows on %10")
                     .arg(QString::fromStdString(options_.input))
                     .arg(info.width)
                     .arg(info.height)
                     .arg(bandCount())
                     .arg(spectra())
                     .arg(QString::fromStdString(result_.libraryFormat))
                     .arg(options_.maxAngle < kAnyAngle
                              ? QString(", at most %1 rad").arg(options_.maxAngle, 0, 'g', 4)
                              : QString())
                     .arg(streamed_.plan.strips.size())
                     .arg(streamed_.plan.stripRows)
                     .arg(QString::fromStdString(result_.backend)));
}

void SamRun::createOutputs() {
  const RasterInfo& info = result_.input;
  classes_ = createLike(info, options_.output, format_, 1, GDT_UInt16);
  GDALRasterBand* band = classes_->dataset().GetRasterBand(1);
  band->SetNoDataValue(0);
  band->SetDescription("class");
  GDALColorTable colours;
  const GDALColorEntry none{0, 0, 0, 0};
  colours.SetColorEntry(0, &none);
  CPLStringList names;
  names.AddString("unclassified");
  for (int k = 0; k < spectra(); ++k) {
    const GDALColorEntry colour = classColour(k);
    colours.SetColorEntry(k + 1, &colour);
    names.AddString(result_.library[k].name.c_str());
  }
  band->SetColorTable(&colours);
  band->SetCategoryNames(names.List());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (!options_.angleOutput.empty()) {
    angle_ = createLike(info, options_.angleOutput, angleFormat_, 1, angleType());
    angle_->dataset().GetRasterBand(1)->SetNoDataValue(nan);
    angle_->dataset().GetRasterBand(1)->SetDescription("spectral angle to the class (rad)");
  }
  if (!options_.anglesOutput.empty()) {
    angles_ = createLike(info, options_.anglesOutput, anglesFormat_, spectra(), angleType());
    for (int k = 0; k < spectra(); ++k) {
      GDALRasterBand* b = angles_->dataset().GetRasterBand(k + 1);
      b->SetNoDataValue(nan);
      b->SetDescription(result_.library[k].name.c_str());
    }
  }
}

// The strip's pixels into the class counts, the classes' angle sums and the angles' histogram
// (class 0 counts invalid pixels too until finish()).
void SamRun::countClasses(const uint16_t* classes, const void* bestAngles, int64_t pixels) {
  withOutputType(options_.outputType, [&](auto sample) {
    using Out = decltype(sample);
    const auto* angles = static_cast<const Out*>(bestAngles);
    for (int64_t p = 0; p < pixels; ++p) {
      ++result_.classCounts[classes[p]];
      const auto angle = static_cast<double>(angles[p]);
      if (std::isnan(angle)) continue;
      result_.classAngleSums[classes[p]] += angle;
      ++result_.angleHistogram[std::min<int64_t>(kAngleBins - 1,
                                                 static_cast<int64_t>(angle / kAngleBin))];
    }
  });
}

void SamRun::classifyPass() {
  result_.classCounts.assign(static_cast<size_t>(spectra()) + 1, 0);
  result_.classAngleSums.assign(static_cast<size_t>(spectra()) + 1, 0.0);
  result_.angleHistogram.assign(kAngleBins, 0);
  const int64_t classBytes = streamed_.plan.stripRows * classRowBytes_;
  const int64_t angleBytes = streamed_.plan.stripRows * angleRowBytes_;
  StripPipeline pipeline(
      kInputBuffers, static_cast<size_t>(streamed_.plan.stripRows * inputRowBytes_), kOutputBuffers,
      static_cast<size_t>(streamed_.plan.stripRows *
                          (classRowBytes_ + angleRowBytes_ + anglesRowBytes_)),
      kernels_->usesEveryCore(), [this](size_t bytes) { return kernels_->allocateHost(bytes); });
  StripPipeline::Stages stages;
  const bool bandMajor =
      readsBandMajor(streamed_.source(result_.input), kernels_->takesBandMajor());
  stages.read = [&](const StripRange& range, unsigned char* buffer) {
    return streamed_.read(range, buffer, bandMajor);
  };
  stages.compute = [&](const StripRange& range, const void* data, unsigned char* out) {
    auto* classes = reinterpret_cast<uint16_t*>(out);
    const StripView strip = jobStrip(input_, range, data, streamed_.groupRows, bandMajor);
    result_.validPixels +=
        kernels_->classify(strip, library_, classes, out + classBytes,
                           anglesRowBytes_ > 0 ? out + classBytes + angleBytes : nullptr);
    countClasses(classes, out + classBytes, strip.pixels);
  };
  stages.write = [&](const StripRange& range, const unsigned char* out) {
    classes_->write(range.row0, range.rows, out, feedback_);
    if (angle_) angle_->write(range.row0, range.rows, out + classBytes, feedback_);
    if (angles_) angles_->write(range.row0, range.rows, out + classBytes + angleBytes, feedback_);
  };
  pipeline.run(streamed_.plan.strips, stages, feedback_, 0.0, 100.0);
}

SamResult SamRun::finish() {
  input_.dataset.reset();
  if (feedback_.isCanceled()) throw Canceled();
  // Class 0 counted every invalid pixel too; only the valid ones were left unclassified.
  const int64_t pixels = result_.input.width * result_.input.height;
  result_.classCounts[0] -= pixels - result_.validPixels;
  result_.device = kernels_->deviceTimes();
  if (!options_.countsCsv.empty())
    saveFileAtomically(options_.countsCsv, classCountsCsv(result_), "OUTPUT_COUNTS");
  result_.seconds = total_.nsecsElapsed() * 1e-9;
  if (!options_.htmlReport.empty()) writeSamReport(result_, options_, classes_->dataset());
  classes_->commit();
  if (angle_) angle_->commit();
  if (angles_) angles_->commit();
  result_.seconds = total_.nsecsElapsed() * 1e-9;
  return result_;
}

void checkOptions(const SamOptions& options) {
  if (options.outputType != OutputType::Float32 && options.outputType != OutputType::Float64)
    throw Error("OUTPUT_TYPE", "angles are written as Float32 or Float64");
  if (!(options.maxAngle > 0) || options.maxAngle > kAnyAngle)
    throw Error("MAX_ANGLE", "the largest angle is in radians, above 0 and at most pi");
  if (options.ramBytes < (16ll << 20))
    throw Error("RAM_MB", "the RAM budget must be at least 16 MiB");
}

QString csvField(const std::string& text) {
  QString field = QString::fromStdString(text);
  if (!field.contains(',') && !field.contains('"') && !field.contains('\n')) return field;
  return '"' + field.replace('"', QStringLiteral("\"\"")) + '"';
}

}  // namespace

QByteArray classCountsCsv(const SamResult& result) {
  QString csv = QStringLiteral("class,name,pixels,percent\n");
  const double valid = std::max<double>(1, static_cast<double>(result.validPixels));
  for (size_t k = 0; k < result.classCounts.size(); ++k)
    csv += QString("%1,%2,%3,%4\n")
               .arg(k)
               .arg(k == 0 ? QStringLiteral("unclassified") : csvField(result.library[k - 1].name))
               .arg(result.classCounts[k])
               .arg(100.0 * static_cast<double>(result.classCounts[k]) / valid, 0, 'f', 4);
  return csv.toUtf8();
}

SamResult runSpectralAngles(const SamOptions& options, Feedback& feedback) {
  try {
    checkOptions(options);
    const DeviceChoice device = oneGpuOf(options.device, "the spectral angle mapper",
                                         ": its pass is bound by reading the file", feedback);
    return leavingOutEmptyBands(options, "SAM", feedback, [&](const SamOptions& bands) {
      return retryingOnTheCpu(device, feedback, [&](const DeviceChoice& chosen) {
        return SamRun(bands, chosen, feedback).run();
      });
    });
  } catch (...) {
    rethrowAsJobError(options.ramBytes);
  }
}

}  // namespace hyperstream
