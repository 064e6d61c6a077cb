#include "unmixing/EndmemberJob.h"

#include "core/AddressSpace.h"
#include "core/Error.h"
#include "io/DecompressedCopy.h"
#include "io/EmptyBands.h"
#include "io/OutputCheck.h"
#include "io/PendingRaster.h"
#include "io/TextFile.h"
#include "pixels/JobStrips.h"
#include "pixels/PixelKernels.h"
#include "run/DeviceSelection.h"
#include "run/Pipeline.h"
#include "run/StripPlan.h"
#include "unmixing/EndmemberReport.h"

#include <QElapsedTimer>
#include <QFileInfo>

#include <ogrsf_frmts.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

namespace hyperstream {

namespace {

// N-FINDR keeps its P values per pixel: the budget's half that it needs.
Error nfindrBudgetError(int count, int64_t bytesPerColumn) {
  const int64_t mib = (count * bytesPerColumn >> 20) + 1;
  return Error("RAM_MB", "N-FINDR keeps " + std::to_string(count) +
                             " values per pixel in memory (" + std::to_string(mib) +
                             " MiB for this image): give it a budget of at "
                             "least " +
                             std::to_string(2 * mib) +
                             " MiB, or use VCA or ATGP, which need not keep anything per pixel");
}

// The searched image's passes (SearchPasses) through the strip pipeline and the kernels; the cube
// stays in memory between them when the plan allows.
class ImagePasses : public SearchPasses {
 public:
  // `deviceResident`: the kernels keep the cube after the first pass (nothing is read again);
  // `keptColumns`: the values per pixel the budget holds; `bandMajor`: strips are read band-major.
  ImagePasses(JobInput& image, const StripPlan& plan, int64_t groupRows, PixelKernels& kernels,
              StripReader& reader, Feedback& feedback, int expectedPasses, bool deviceResident,
              int keptColumns, bool bandMajor)
      : image_(image),
        plan_(plan),
        groupRows_(groupRows),
        kernels_(kernels),
        reader_(reader),
        feedback_(feedback),
        expectedPasses_(expectedPasses),
        deviceResident_(deviceResident),
        keptColumns_(keptColumns),
        bandMajor_(bandMajor),
        rowBytes_(image.info.width * bands() * typeSize(image.info.type)) {
    if (plan.cubeFits && !deviceResident)
      cube_ = kernels.allocateHost(static_cast<size_t>(plan.cubeBytes()));
  }

  int bands() const override { return static_cast<int>(image_.bands.size()); }
  int64_t pixels() const override { return image_.info.width * image_.info.height; }

  Moments moments(PixelSampler* sampler) override {
    pass([&](const StripView& strip) {
      kernels_.accumulateMoments(strip);
      if (sampler) sampler->take(strip);
    });
    return kernels_.takeMoments(bands());
  }

  SearchFound best(const PixelSearch& search) override {
    SearchFound total;
    total.best.resize(search.scoreCount());
    pass([&](const StripView& strip) {
      const SearchFound found = kernels_.search(strip, search);
      total.validPixels += found.validPixels;
      for (size_t s = 0; s < total.best.size(); ++s)
        if (found.best[s].beats(total.best[s])) total.best[s] = found.best[s];
    });
    return total;
  }

  bool mayKeep(int columns) const override { return columns <= keptColumns_; }

  void keep(const KeptProjection& projection) override {
    if (projection.columns > keptColumns_)  // N-FINDR, with a count known only now
      throw nfindrBudgetError(projection.columns, image_.info.width * image_.info.height * 8);
    pass([&](const StripView& strip) { kernels_.keepProjection(strip, projection); });
  }

  void keepEnergy() override {
    pass([&](const StripView& strip) { kernels_.keepEnergy(strip); });
  }

  void deflate(const std::vector<double>& direction) override {
    pass([&](const StripView& strip) { kernels_.deflateKept(strip, direction); });
  }

  SearchFound bestKept(const PixelSearch& search) override { return kernels_.searchKept(search); }

  std::vector<double> kept(int64_t pixel) override { return kernels_.keptValues(pixel); }

  std::vector<double> spectrum(int64_t pixel) override {
    const int64_t width = image_.info.width;
    return readSpectrum(*image_.dataset, image_.bands, pixel / width, pixel % width, "INPUT");
  }

  static std::vector<double> readSpectrum(GDALDataset& dataset, const std::vector<int>& bands,
                                          int64_t row, int64_t col, const std::string& parameter) {
    return readWindowAsDouble(dataset, bands, col, row, 1, 1, parameter);
  }

 private:
  void pass(const std::function<void(const StripView&)>& compute) {
    const bool onDevice = deviceResident_ && passes_ > 0;  // the kernels hold the cube
    const bool resident = cube_ != nullptr;
    const bool read = !onDevice && (!resident || passes_ == 0);
    StripPipeline pipeline(resident || onDevice ? 0 : kInputBuffers,
                           static_cast<size_t>(plan_.stripRows * rowBytes_), 0, 0, true,
                           [this](size_t bytes) { return kernels_.allocateHost(bytes); });
    StripPipeline::Stages stages;
    stages.read = [&](const StripRange& range, unsigned char* buffer) -> const void* {
      if (onDevice) return nullptr;
      unsigned char* target = resident ? cube_.get() + range.row0 * rowBytes_ : buffer;
      if (read && bandMajor_)
        reader_.readBandMajor(range.row0, range.rows, target);
      else if (read)
        reader_.read(range.row0, range.rows, target);
      return target;
    };
    stages.compute = [&](const StripRange& range, const void* data, unsigned char*) {
      compute(jobStrip(image_, range, data, groupRows_, bandMajor_));
    };
    // Each pass a share of what is left, as the number of passes is only estimated.
    const double done = 1.0 - std::pow(1.0 - 1.0 / expectedPasses_, passes_);
    const double next = 1.0 - std::pow(1.0 - 1.0 / expectedPasses_, passes_ + 1);
    pipeline.run(plan_.strips, stages, feedback_, 95.0 * done, 95.0 * next);
    ++passes_;
  }

  JobInput& image_;
  const StripPlan& plan_;
  int64_t groupRows_;
  PixelKernels& kernels_;
  StripReader& reader_;
  Feedback& feedback_;
  int expectedPasses_;
  bool deviceResident_;
  int keptColumns_;
  bool bandMajor_;
  int64_t rowBytes_;
  int passes_ = 0;
  HostMemory cube_{nullptr, [](unsigned char*) {}};
};

// The vector driver of a points output, by its extension.
GDALDriver* pointsDriver(const std::string& path) {
  const QString suffix = QFileInfo(QString::fromStdString(path)).suffix().toLower();
  const char* name = suffix == "gpkg"                          ? "GPKG"
                     : suffix == "shp"                         ? "ESRI Shapefile"
                     : suffix == "geojson" || suffix == "json" ? "GeoJSON"
                                                               : nullptr;
  GDALDriver* driver = name ? GetGDALDriverManager()->GetDriverByName(name) : nullptr;
  if (!driver)
    throw Error("OUTPUT_POINTS",
                "'" + path +
                    "': the endmember pixels are written as a "
                    "GeoPackage (.gpkg), a shapefile (.shp) or GeoJSON (.geojson)");
  return driver;
}

// Passes over the image (for the progress and `auto`'s weighing): VCA and N-FINDR make two when
// they keep their values per pixel; N-FINDR always does.
int expectedPasses(EndmemberMethod method, int count, bool keepsValues) {
  switch (method) {
    case EndmemberMethod::Atgp:
      return count;
    case EndmemberMethod::Vca:
      return keepsValues ? 2 : count + 2;
    case EndmemberMethod::Nfindr:
      return 2;
  }
  return count;
}

// One run, as named steps: open the inputs, check the outputs, plan, start the kernels, search,
// take the spectra, write.
class EndmemberRun {
 public:
  EndmemberRun(const EndmemberOptions& options, const DeviceChoice& device, Feedback& feedback)
      : options_(options),
        feedback_(feedback),
        starting_(device, 0, {makeCpuPixelKernels, &GpuRuntime::createPixelKernels}) {
    total_.start();
  }

  EndmemberResult run() {
    openInputs();
    checkOutputs();
    planMemory();
    startKernels();
    search();
    takeSpectra();
    result_.seconds = total_.nsecsElapsed() * 1e-9;  // the report's: before the outputs
    writeOutputs();
    return result_;
  }

 private:
  JobInput& searched() { return locations_.dataset ? locations_ : input_; }
  // What the passes read: the searched image, or its decompressed copy.
  const RasterInfo& source() { return copy_ ? copy_->info() : searched().info; }
  void openInputs();
  void checkOutputs();
  void chooseKeptValues();
  int plannedCount() const;
  int passesExpected() const;
  void planMemory();
  void startKernels();
  void search();
  void takeSpectra();
  Endmember spectrumAt(int64_t row, int64_t col, int index);
  void averageHomogeneousWindow(Endmember& e);
  std::vector<double> readBlock(int64_t top, int64_t left, int64_t rows, int64_t cols);
  void writeOutputs();
  void writePoints();
  void writePointLayer();

  const EndmemberOptions& options_;
  Feedback& feedback_;
  QElapsedTimer total_;
  KernelStart<PixelKernels> starting_;
  JobInput input_, locations_;
  EndmemberResult result_;
  StripPlan plan_;
  int64_t groupRows_ = 1;
  std::unique_ptr<PixelKernels> kernels_;
  int keptColumns_ = 0;  // values per pixel the search may keep (budgeted)
  bool deviceResident_ = false;
  std::unique_ptr<DecompressedCopy> copy_;  // read instead of a compressed input
  std::unique_ptr<StripReader> reader_;
};

void EndmemberRun::openInputs() {
  if (options_.orthorectify)
    throw Error("ORTHORECTIFY",
                "endmember extraction writes no raster to put on a map grid; its table holds "
                "image rows and columns");
  input_ = openJobInput(options_, options_.bands, "endmember extraction", feedback_);
  input_.dataset = openMapped(options_.input, "INPUT");  // spectra read pixel by pixel
  result_.input = input_.info;
  result_.bands = input_.bands;
  const int window = options_.averageWindow;
  if (window > 1 && (window > input_.info.width || window > input_.info.height))
    throw Error("AVERAGE_WINDOW", "a " + std::to_string(window) + " x " + std::to_string(window) +
                                      " window does not fit an image of " +
                                      std::to_string(input_.info.width) + " x " +
                                      std::to_string(input_.info.height) +
                                      " pixels: choose a smaller one, or 1 (no averaging)");
  if (!options_.locations.empty()) {
    try {
      locations_ = openJobInput(options_.locations, {}, {}, {}, "endmember extraction");
      locations_.dataset = openMapped(options_.locations, "LOCATIONS");
    } catch (const Error& e) {
      throw Error("LOCATIONS", e.what());
    }
    if (locations_.info.width != input_.info.width || locations_.info.height != input_.info.height)
      throw Error("LOCATIONS", "'" + options_.locations + "' is " +
                                   std::to_string(locations_.info.width) + " x " +
                                   std::to_string(locations_.info.height) + " pixels, the input " +
                                   std::to_string(input_.info.width) + " x " +
                                   std::to_string(input_.info.height) +
                                   ": the pixels found there are taken from the input");
  }
  const RasterInfo& info = searched().info;
  result_.searchedBands = static_cast<int>(searched().bands.size());
  chooseKeptValues();
  starting_.weigh({info.width * info.height * result_.searchedBands * typeSize(info.type),
                   static_cast<double>(passesExpected())});
  if (checkAddressSpace(options_.ramBytes)) searched().info.mappable = false;
}

void EndmemberRun::checkOutputs() {
  std::vector<InputFile> reads = rasterInputFiles("INPUT", input_.info.files);
  if (locations_.dataset) {
    const std::vector<InputFile> locations = rasterInputFiles("LOCATIONS", locations_.info.files);
    reads.insert(reads.end(), locations.begin(), locations.end());
  }
  OutputCheck outputs(std::move(reads), feedback_);
  outputs.file("OUTPUT", options_.output);
  if (!options_.htmlReport.empty()) outputs.file("OUTPUT_HTML_FILE", options_.htmlReport);
  if (!options_.pointsOutput.empty()) {
    pointsDriver(options_.pointsOutput);
    outputs.file("OUTPUT_POINTS", options_.pointsOutput);
  }
}

// N-FINDR keeps [1; y] of every pixel, VCA its coordinates and ATGP each pixel's residual energy
// when they fit half the budget (else ATGP and VCA search the image in every pass): taken from the
// budget before the strips are planned.
void EndmemberRun::chooseKeptValues() {
  const RasterInfo& info = searched().info;
  const int64_t bytesPerColumn = info.width * info.height * 8;
  const EndmemberMethod method = options_.search.method;
  const int64_t fitting = options_.ramBytes / 2 / bytesPerColumn;
  if (options_.search.count == kCountFromScene && method != EndmemberMethod::Atgp) {
    // The count is known after the first pass: keep as many values as half the budget holds
    // (N-FINDR refuses then if they are too few).
    keptColumns_ = static_cast<int>(std::min<int64_t>(plannedCount(), fitting));
    return;
  }
  const int64_t count = options_.search.count;
  if (method == EndmemberMethod::Nfindr && count > fitting)
    throw nfindrBudgetError(static_cast<int>(count), bytesPerColumn);
  const int64_t wanted = method == EndmemberMethod::Atgp ? 1 : count;
  keptColumns_ = wanted <= fitting ? static_cast<int>(wanted) : 0;
}

// The count to plan memory and passes for: the one asked for, or the most the signal subspace's
// estimate can give (it is known only after the first pass).
int EndmemberRun::plannedCount() const {
  if (options_.search.count != kCountFromScene) return options_.search.count;
  return std::min(kMaxEndmembers, result_.searchedBands);
}

int EndmemberRun::passesExpected() const {
  const bool estimating = options_.search.count == kCountFromScene;
  const bool extraPass = estimating && options_.search.method == EndmemberMethod::Atgp;
  return expectedPasses(options_.search.method, plannedCount(), keptColumns_ > 0) + extraPass;
}

// Per buffered row: the searched image in its type (a pool of buffers when it is read in every
// pass); the kernels' float64 blocks are a few MiB whatever the strip.
void EndmemberRun::planMemory() {
  const RasterInfo& info = searched().info;
  const int64_t keptBytes = int64_t{keptColumns_} * info.width * info.height * 8;
  const int64_t rowBytes = info.width * result_.searchedBands * typeSize(info.type);
  StripNeeds needs;
  needs.rowsToDo = info.height;
  needs.bands = result_.searchedBands;
  needs.streamingRowBytes = kInputBuffers * rowBytes;
  groupRows_ = groupRows(info.width);
  needs.rowMultiple = groupRows_;
  needs.requestedRows = options_.stripRows;
  plan_ = hyperstream::planMemory(info, options_.ramBytes - keptBytes, needs);
  // Every search is a pass: a compressed file whose blocks are too large for the budget is
  // decompressed once into a copy beside the output, not in each pass.
  copy_ = decompressIfStreamed(info, searched().bands, options_.ramBytes - keptBytes, needs,
                               options_.output, plan_, feedback_);
  result_.stripRows = plan_.stripRows;
  const int64_t bufferBytes =
      plan_.cubeFits ? plan_.cubeBytes() : plan_.stripRows * needs.streamingRowBytes;
  reader_ = std::make_unique<StripReader>(source(), copy_ ? copy_->bands() : searched().bands,
                                          plan_.readers, plan_.mappableBytes(bufferBytes), 0);
}

void EndmemberRun::startKernels() {
  kernels_ = starting_.get(feedback_);
  result_.backend = kernels_->name();
  const RasterInfo& info = searched().info;
  CubeLayout layout;
  layout.pixels = info.width * info.height;
  layout.bands = result_.searchedBands;
  layout.type = searched().sampleType;
  layout.maxStripPixels = plan_.stripRows * info.width;
  deviceResident_ = kernels_->prepare(layout);
  result_.resident = plan_.cubeFits || deviceResident_;
  feedback_.info(
      QString("%1: %2 endmembers by %3 over %4 (%5 x %6 pixels, %7 bands), %8 strip(s) of %9 "
              "rows%10 on %11")
          .arg(QString::fromStdString(options_.input))
          .arg(options_.search.count == kCountFromScene ? QString("the scene's count of")
                                                        : QString::number(options_.search.count))
          .arg(QString::fromStdString(endmemberMethodName(options_.search.method)).toUpper())
          .arg(locations_.dataset ? QString::fromStdString(options_.locations) : "the input")
          .arg(info.width)
          .arg(info.height)
          .arg(result_.searchedBands)
          .arg(plan_.strips.size())
          .arg(plan_.stripRows)
          .arg(deviceResident_  ? " (the cube stays in GPU memory between the passes)"
               : plan_.cubeFits ? " (the cube stays in memory between the passes)"
                                : "")
          .arg(QString::fromStdString(result_.backend)));
}

void EndmemberRun::search() {
  ImagePasses passes(searched(), plan_, groupRows_, *kernels_, *reader_, feedback_,
                     passesExpected(), deviceResident_, keptColumns_,
                     // Band-major strips are gathered anew in each pass: worth it only where each
                     // pass reads the file; a cube kept in memory is interleaved once, on reading.
                     !plan_.cubeFits && readsBandMajor(source(), kernels_->takesBandMajor()));
  result_.search = findEndmembers(passes, options_.search);
  if (const std::optional<MaterialCount>& materials = result_.search.materials)
    feedback_.info(QString::fromStdString(materialCountText(*materials, *result_.search.subspace)));
  if (options_.search.method == EndmemberMethod::Vca)
    feedback_.info("VCA: " + QString::fromStdString(vcaChoiceText(result_.search)));
  if (options_.search.method == EndmemberMethod::Nfindr)
    feedback_.info(QString("N-FINDR: %1 replacement(s) over ATGP's start, the simplex volume "
                           "%2 times as large")
                       .arg(result_.search.replacements)
                       .arg(result_.search.volumeGrowth, 0, 'g', 4));
  if (!result_.search.converged)
    feedback_.warning(QString("N-FINDR stopped after %1 passes with replacements still growing the "
                              "volume; the endmembers are the last set found")
                          .arg(result_.search.passes));
}

void EndmemberRun::takeSpectra() {
  EndmemberTable& table = result_.table;
  table.bandNames = bandColumnNames(input_.info, input_.bands);
  const int64_t width = input_.info.width;
  for (size_t i = 0; i < result_.search.pixels.size(); ++i) {
    const int64_t pixel = result_.search.pixels[i];
    table.endmembers.push_back(spectrumAt(pixel / width, pixel % width, static_cast<int>(i)));
  }
}

// The input's spectrum at (row, col), or the mean of the most homogeneous window around it.
Endmember EndmemberRun::spectrumAt(int64_t row, int64_t col, int index) {
  const int bands = static_cast<int>(input_.bands.size());
  const ValidPixel<double> isValid(input_.nodata.data(), bands);
  Endmember e;
  e.id = "endmember_" + std::to_string(index + 1);
  e.row = row;
  e.col = col;
  e.spectrum = ImagePasses::readSpectrum(*input_.dataset, input_.bands, row, col, "INPUT");
  if (!isValid(e.spectrum.data()))
    throw Error("LOCATIONS", "pixel (" + std::to_string(row) + ", " + std::to_string(col) +
                                 "), found in '" + options_.locations +
                                 "', is nodata in the input: the two images do not match");
  if (options_.averageWindow > 1) averageHomogeneousWindow(e);
  return e;
}

// Among the windows of the averaging size that hold the endmember's pixel, lie inside the image
// and have only valid pixels, the one of least total variance about its mean spectrum (the most
// homogeneous: at the edge of a pure area, the window inside it); the spectrum becomes its mean.
// Without such a window the pixel stays alone.
void EndmemberRun::averageHomogeneousWindow(Endmember& e) {
  const int n = options_.averageWindow, bands = static_cast<int>(input_.bands.size());
  const RasterInfo& info = input_.info;
  const int64_t top = std::max<int64_t>(0, e.row - (n - 1));
  const int64_t left = std::max<int64_t>(0, e.col - (n - 1));
  const int64_t rows = std::min(info.height, e.row + n) - top;
  const int64_t cols = std::min(info.width, e.col + n) - left;
  const std::vector<double> block = readBlock(top, left, rows, cols);
  const ValidPixel<double> isValid(input_.nodata.data(), bands);
  double leastVariance = std::numeric_limits<double>::infinity();
  for (int64_t r0 = 0; r0 + n <= rows; ++r0)
    for (int64_t c0 = 0; c0 + n <= cols; ++c0) {
      if (top + r0 > e.row || top + r0 + n <= e.row || left + c0 > e.col || left + c0 + n <= e.col)
        continue;  // the window must hold the pixel
      std::vector<double> mean(bands, 0.0);
      bool allValid = true;
      for (int64_t r = r0; r < r0 + n; ++r)
        for (int64_t c = c0; c < c0 + n; ++c) {
          const double* x = block.data() + (r * cols + c) * bands;
          allValid = allValid && isValid(x);
          for (int b = 0; b < bands; ++b) mean[b] += x[b] / (n * n);
        }
      if (!allValid) continue;
      double variance = 0;
      for (int64_t r = r0; r < r0 + n; ++r)
        for (int64_t c = c0; c < c0 + n; ++c)
          for (int b = 0; b < bands; ++b) {
            const double d = block[(r * cols + c) * bands + b] - mean[b];
            variance += d * d;
          }
      if (variance < leastVariance) {
        leastVariance = variance;
        e.spectrum = mean;
        e.pixelsAveraged = n * n;
      }
    }
  if (leastVariance == std::numeric_limits<double>::infinity())
    feedback_.warning(QString("%1 (row %2, column %3): no %4 x %4 window of valid pixels holds it; "
                              "its own spectrum is kept")
                          .arg(QString::fromStdString(e.id))
                          .arg(e.row)
                          .arg(e.col)
                          .arg(n));
}

// Rows [top, top + rows) x columns [left, left + cols) of the input's selected bands, as float64,
// pixel-interleaved.
std::vector<double> EndmemberRun::readBlock(int64_t top, int64_t left, int64_t rows, int64_t cols) {
  return readWindowAsDouble(*input_.dataset, input_.bands, left, top, cols, rows, "INPUT");
}

void EndmemberRun::writeOutputs() {
  if (feedback_.isCanceled()) throw Canceled();
  // The points and the report first: the CSV is the main output, replaced last.
  if (!options_.pointsOutput.empty()) writePoints();
  if (!options_.htmlReport.empty()) writeEndmemberReport(result_, options_, options_.htmlReport);
  saveFileAtomically(options_.output, endmembersCsv(result_.table), "OUTPUT");
  feedback_.setProgress(100.0);
}

// The points, errors of the raster plumbing (named OUTPUT) named as theirs.
void EndmemberRun::writePoints() {
  try {
    writePointLayer();
  } catch (const Error& error) {
    if (error.parameter() != "OUTPUT") throw;
    throw Error("OUTPUT_POINTS", error.what());
  }
}

// A point at each endmember pixel's centre, in the raster's CRS, with its id, row and column
// and its spectrum (a field per band, named as the table's columns): QGIS's Identify shows it.
void EndmemberRun::writePointLayer() {
  const RasterInfo& info = input_.info;
  PendingRaster points(options_.pointsOutput, RasterFormat{pointsDriver(options_.pointsOutput), {}},
                       0, 0, 0, GDT_Unknown);
  QuietGdalErrors quiet;  // the errors below say what GDAL said
  OGRSpatialReference crs;
  const bool hasCrs = !info.crsWkt.empty() && crs.importFromWkt(info.crsWkt.c_str()) == OGRERR_NONE;
  if (hasCrs) crs.SetAxisMappingStrategy(OAMS_TRADITIONAL_GIS_ORDER);
  OGRLayer* layer =
      points.dataset().CreateLayer("endmembers", hasCrs ? &crs : nullptr, wkbPoint, nullptr);
  if (!layer) throw Error("OUTPUT_POINTS", "cannot create the point layer: " + gdalErrorText());
  auto addField = [&](const std::string& name, OGRFieldType type) {
    OGRFieldDefn field(name.c_str(), type);
    if (layer->CreateField(&field) != OGRERR_NONE)
      throw Error("OUTPUT_POINTS", "cannot add the field '" + name + "': " + gdalErrorText());
  };
  addField("id", OFTString);
  addField("row", OFTInteger64);
  addField("col", OFTInteger64);
  const std::vector<std::string>& bands = result_.table.bandNames;
  for (const std::string& name : bands) addField(name, OFTReal);
  const std::array<double, 6> identity{0, 1, 0, 0, 0, 1};
  const std::array<double, 6>& g = info.hasGeoTransform ? info.geoTransform : identity;
  for (const Endmember& e : result_.table.endmembers) {
    OGRFeature feature(layer->GetLayerDefn());
    feature.SetField("id", e.id.c_str());
    feature.SetField("row", static_cast<GIntBig>(e.row));
    feature.SetField("col", static_cast<GIntBig>(e.col));
    for (size_t b = 0; b < bands.size() && b < e.spectrum.size(); ++b)
      feature.SetField(static_cast<int>(3 + b), e.spectrum[b]);
    const double x = e.col + 0.5, y = e.row + 0.5;
    OGRPoint point(g[0] + x * g[1] + y * g[2], g[3] + x * g[4] + y * g[5]);
    feature.SetGeometry(&point);
    if (layer->CreateFeature(&feature) != OGRERR_NONE)
      throw Error("OUTPUT_POINTS", "cannot write a point: " + gdalErrorText());
  }
  points.commit();
}

void checkOptions(const EndmemberOptions& options) {
  if (options.averageWindow < 1 || options.averageWindow > 15 || options.averageWindow % 2 == 0)
    throw Error("AVERAGE_WINDOW", "the averaging window must be odd, from 1 to 15 pixels (" +
                                      std::to_string(options.averageWindow) + " given)");
  if (options.ramBytes < (16ll << 20))
    throw Error("RAM_MB", "the RAM budget must be at least 16 MiB");
  if (options.device.severalGpus())
    throw Error("DEVICE", "endmember extraction runs on one device: auto, cpu, gpu or gpu:N");
}

}  // namespace

EndmemberResult runEndmembers(const EndmemberOptions& options, Feedback& feedback) {
  try {
    checkOptions(options);
    return leavingOutEmptyBands(
        options, "endmember extraction", feedback, [&](const EndmemberOptions& chosen) {
          return retryingOnTheCpu(chosen.device, feedback, [&](const DeviceChoice& device) {
            return EndmemberRun(chosen, device, feedback).run();
          });
        });
  } catch (...) {
    rethrowAsJobError(options.ramBytes);
  }
}

}  // namespace hyperstream
