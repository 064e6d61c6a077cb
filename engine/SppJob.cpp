#include "SppJob.h"

#include "Error.h"
#include "GpuRuntime.h"
#include "PendingRaster.h"
#include "Pipeline.h"
#include "Samples.h"

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
// Strips no larger than this, so that writing one strip overlaps computing the next.
constexpr int64_t kMaxStripBytes = 8ll << 20;

// Unit spectra (float32: their differences stay accurate to ~1e-7, far inside alpha's 1e-6) and
// validity of a block of whole rows.
struct UnitBlock {
  std::vector<float> unit;
  std::vector<unsigned char> valid;
};

// Runs f(first, last) over [0, count) split between the machine's cores.
template <class F>
void inParallel(int64_t count, F&& f) {
  const int64_t threads = std::min<int64_t>(std::max(1, QThread::idealThreadCount()), count);
  if (threads <= 1) {
    f(int64_t{0}, count);
    return;
  }
  std::vector<std::thread> workers;
  for (int64_t t = 0; t < threads; ++t)
    workers.emplace_back([&, t] { f(count * t / threads, count * (t + 1) / threads); });
  for (std::thread& worker : workers) worker.join();
}

// A valid pixel: the sample type's test (finite, not nodata) and a spectrum that is not all zero.
template <class T>
bool validSpectrum(const T* pixel, int bands, const ValidPixel<T>& isValid) {
  if (!isValid(pixel)) return false;
  for (int b = 0; b < bands; ++b)
    if (pixel[b] != T(0)) return true;
  return false;
}

// Sum of squares in 8 running sums so that the compiler vectorises it without reassociating.
template <class T>
HYPERSTREAM_VECTOR_CLONES double sumOfSquares(const T* __restrict pixel, int bands, double scale) {
  double lanes[8] = {};
  int b = 0;
  for (; b + 8 <= bands; b += 8)
    for (int j = 0; j < 8; ++j) {
      const double v = static_cast<double>(pixel[b + j]) * scale;
      lanes[j] += v * v;
    }
  double sum = 0;
  for (; b < bands; ++b) sum += (pixel[b] * scale) * (pixel[b] * scale);
  for (double lane : lanes) sum += lane;
  return sum;
}

// 1 / |pixel|; samples so large that their squares overflow are scaled by the largest first.
template <class T>
double unitScale(const T* pixel, int bands) {
  const double norm2 = sumOfSquares(pixel, bands, 1.0);
  if (std::isfinite(norm2)) return 1.0 / std::sqrt(norm2);
  double largest = 0;
  for (int b = 0; b < bands; ++b)
    largest = std::max(largest, std::abs(static_cast<double>(pixel[b])));
  return 1.0 / (std::sqrt(sumOfSquares(pixel, bands, 1.0 / largest)) * largest);
}

template <class T>
void unitSpectra(const T* data, int64_t pixels, int bands, const ValidPixel<T>& isValid,
                 UnitBlock& block) {
  block.unit.resize(static_cast<size_t>(pixels) * bands);
  block.valid.resize(pixels);
  inParallel(pixels, [&](int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p) {
      const T* pixel = data + p * bands;
      float* unit = &block.unit[p * bands];
      block.valid[p] = validSpectrum(pixel, bands, isValid);
      if (!block.valid[p]) {
        std::fill(unit, unit + bands, 0.0f);
        continue;
      }
      const double scale = unitScale(pixel, bands);
      for (int b = 0; b < bands; ++b) unit[b] = static_cast<float>(pixel[b] * scale);
    }
  });
}

// |u - v|^2, in 16 running sums so that the compiler vectorises it without reassociating.
HYPERSTREAM_VECTOR_CLONES float distance2(const float* __restrict u, const float* __restrict v,
                                          int bands) {
  float lanes[16] = {};
  int b = 0;
  for (; b + 16 <= bands; b += 16)
    for (int j = 0; j < 16; ++j) {
      const float d = u[b + j] - v[b + j];
      lanes[j] += d * d;
    }
  float sum = 0;
  for (; b < bands; ++b) sum += (u[b] - v[b]) * (u[b] - v[b]);
  for (float lane : lanes) sum += lane;
  return sum;
}

// Row or column `i + delta` under the border rule, or -1 when it is not used; `reflected` tells
// whether the mirror rule moved it.
int64_t neighbour(int64_t i, int delta, int64_t size, SppBorder border, bool& reflected) {
  int64_t j = i + delta;
  reflected = false;
  if (j >= 0 && j < size) return j;
  if (border == SppBorder::Truncate) return -1;
  reflected = true;
  j = j < 0 ? -j : 2 * (size - 1) - j;  // the edge itself not repeated
  return j >= 0 && j < size ? j : -1;
}

// The spectral angle between unit spectra, 2 asin(|u - v| / 2): accurate for small angles, where
// arccos of a dot product is not. Neighbours' angles are mostly small; there asin's Taylor series
// (to t^11, relative error below 1e-8 for t < 0.25) is several times cheaper than asinf.
float spectralAngle(const float* u, const float* v, int bands) {
  const float t = std::min(1.0f, std::sqrt(distance2(u, v, bands)) * 0.5f);
  if (t >= 0.25f) return 2.0f * std::asin(t);
  const float t2 = t * t;
  return 2.0f * t *
         (1.0f +
          t2 * (1.0f / 6 + t2 * (3.0f / 40 +
                                 t2 * (15.0f / 336 + t2 * (105.0f / 3456 + t2 * 945.0f / 42240)))));
}

// The window's offsets in a fixed order, each with its reverse and its weight 1/(dr^2 + dc^2).
struct Window {
  struct Offset {
    int dr, dc;
    int reverse;
    double beta;
    bool forward;  // the first of the pair (dr, dc), (-dr, -dc)
  };
  std::vector<Offset> offsets;
  explicit Window(int halo) {
    for (int dr = -halo; dr <= halo; ++dr)
      for (int dc = -halo; dc <= halo; ++dc)
        if (dr != 0 || dc != 0)
          offsets.push_back({dr, dc, 0, 1.0 / (dr * dr + dc * dc), dr > 0 || (dr == 0 && dc > 0)});
    // Offset i's reverse is at the mirrored position of the list.
    for (size_t i = 0; i < offsets.size(); ++i)
      offsets[i].reverse = static_cast<int>(offsets.size() - 1 - i);
  }
};

}  // namespace

SppResult runSpp(const SppOptions& options, Feedback& feedback) {
  QElapsedTimer total;
  total.start();
  if (options.window < 3 || options.window > 15 || options.window % 2 == 0)
    throw Error("WINDOW", "the window must be odd, from 3 to 15 pixels (" +
                              std::to_string(options.window) + " given)");
  if (options.outputType == OutputType::Byte)
    throw Error("OUTPUT_TYPE", "SPP writes Float32 or Float64");
  if (options.ramBytes < (16ll << 20))
    throw Error("RAM_MB", "the RAM budget must be at least 16 MiB");
  if (parseDevice(options.device) >= 0)
    throw Error("DEVICE", "SPP runs on the CPU in this version (its GPU kernel is not built yet)");
  SppResult result;
  DatasetPtr input = openRaster(options.input, "INPUT");
  result.input = describeRaster(*input, options.input);
  const RasterInfo& info = result.input;
  if (GDALDataTypeIsComplex(info.type))
    throw Error("INPUT", std::string("complex data (") + GDALGetDataTypeName(info.type) +
                             ") is not supported");
  result.bands = selectBands(options.bands, info.bandCount, "SPP");
  const int bands = static_cast<int>(result.bands.size());
  checkOutputPath(options.output, info.files, "OUTPUT");
  GDALDriver* driver = outputDriver(options.output, options.format);
  std::vector<std::string> taken = info.files;
  taken.push_back(options.output);
  if (!options.alphaOutput.empty()) {
    checkOutputPath(options.alphaOutput, taken, "OUTPUT_ALPHA");
    taken.push_back(options.alphaOutput);
  }
  if (!options.rhoOutput.empty()) checkOutputPath(options.rhoOutput, taken, "OUTPUT_RHO");
  std::vector<double> nodata;
  for (int b : result.bands) nodata.push_back(info.nodata[b - 1]);

  // Memory plan: per strip row the input in its type (a pool of buffers), its float64 values and
  // unit vectors, and the outputs; the window's halo rows come on top of each strip.
  const int halo = options.window / 2;
  const int sampleSize = typeSize(info.type);
  const GDALDataType outputType =
      options.outputType == OutputType::Float64 ? GDT_Float64 : GDT_Float32;
  const int outputSize = typeSize(outputType);
  const int64_t inputRowBytes = info.width * bands * sampleSize;
  const int64_t outputRowBytes = info.width * (bands * int64_t{outputSize} + int64_t{8});
  const int64_t perRow =
      kInputBuffers * inputRowBytes + info.width * bands * 4 + kOutputBuffers * outputRowBytes;
  const int64_t budget = options.ramBytes - std::min<int64_t>(64ll << 20, options.ramBytes / 4);
  int64_t stripRows = budget / perRow - int64_t{2} * halo;
  stripRows =
      std::min({stripRows, kMaxStripBytes / std::max<int64_t>(1, inputRowBytes), info.height});
  if (options.stripRows > 0) stripRows = std::min(options.stripRows, info.height);
  if (stripRows < 1)
    throw Error("RAM_MB", "the RAM budget is too small for one strip of image rows and its " +
                              std::to_string(2 * halo) + " halo rows");
  result.stripRows = stripRows;
  const std::vector<StripRange> strips = planStrips(info.height, stripRows);
  feedback.info(QString("%1: %2 x %3 pixels, %4 bands; window %5 (%6 border), %7 strip(s) of %8 "
                        "rows on the CPU")
                    .arg(QString::fromStdString(options.input))
                    .arg(info.width)
                    .arg(info.height)
                    .arg(bands)
                    .arg(options.window)
                    .arg(options.border == SppBorder::Mirror ? "mirror" : "truncate")
                    .arg(strips.size())
                    .arg(stripRows));
  StripReader reader(options.input, result.bands, info.type, info.width,
                     std::max(1, QThread::idealThreadCount()), 64ll << 20);

  // Pass 1: the centroid c of the valid pixels, summed in pixel order (the same for any strips).
  std::vector<double> sum(bands, 0.0);
  int64_t count = 0;
  {
    StripPipeline pipeline(kInputBuffers, static_cast<size_t>(stripRows * inputRowBytes), 0, 0,
                           false);
    StripPipeline::Stages stages;
    stages.read = [&](const StripRange& range, unsigned char* buffer) -> const void* {
      reader.read(range.row0, range.rows, buffer);
      return buffer;
    };
    stages.compute = [&](const StripRange& range, const void* data, unsigned char*) {
      withSampleType(info.type, [&](auto sample) {
        using T = decltype(sample);
        const ValidPixel<T> isValid(nodata.data(), bands);
        const T* pixel = static_cast<const T*>(data);
        for (int64_t p = 0; p < range.rows * info.width; ++p, pixel += bands) {
          if (!validSpectrum(pixel, bands, isValid)) continue;
          ++count;
          for (int b = 0; b < bands; ++b) sum[b] += static_cast<double>(pixel[b]);
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
  const std::vector<double>& c = result.centroid;

  // Invalid pixels: the input's nodata where it declares one, NaN otherwise.
  const auto declared =
      std::find_if(nodata.begin(), nodata.end(), [](double v) { return !std::isnan(v); });
  const double outputNodata =
      declared != nodata.end() ? *declared : std::numeric_limits<double>::quiet_NaN();
  const float nan = std::numeric_limits<float>::quiet_NaN();

  // Pass 2: strips with their halo rows in, displaced spectra, alpha and rho out.
  auto create = [&](const std::string& path, int count, GDALDataType type, double noValue) {
    auto raster = std::make_unique<PendingRaster>(path, driver, info.width, info.height, count,
                                                  type, options.creationOptions);
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

  const int64_t cubeBytes = stripRows * info.width * bands * outputSize;
  double alphaSum = 0;
  {
    StripPipeline pipeline(kInputBuffers,
                           static_cast<size_t>((stripRows + int64_t{2} * halo) * inputRowBytes),
                           kOutputBuffers, static_cast<size_t>(stripRows * outputRowBytes), false);
    StripPipeline::Stages stages;
    auto haloRange = [&](const StripRange& range) {
      const int64_t first = std::max<int64_t>(0, range.row0 - halo);
      return StripRange{first, std::min(info.height, range.row0 + range.rows + halo) - first};
    };
    stages.read = [&](const StripRange& range, unsigned char* buffer) -> const void* {
      const StripRange rows = haloRange(range);
      reader.read(rows.row0, rows.rows, buffer);
      return buffer;
    };
    UnitBlock block;
    const Window window(halo);
    std::vector<float> angles;
    stages.compute = [&](const StripRange& range, const void* data, unsigned char* out) {
      const StripRange rows = haloRange(range);
      withSampleType(info.type, [&](auto sample) {
        using T = decltype(sample);
        const T* samples = static_cast<const T*>(data);
        unitSpectra(samples, rows.rows * info.width, bands, ValidPixel<T>(nodata.data(), bands),
                    block);
        auto* alphaOut = reinterpret_cast<float*>(out + cubeBytes);
        float* rhoOut = alphaOut + range.rows * info.width;
        const int64_t pixels = range.rows * info.width;
        // Every neighbour pair inside the strip is measured once, for both pixels: gamma is
        // symmetric. Angles go into a table, one slot per pixel and offset, summed in offset
        // order afterwards, so that alpha does not depend on strips or threads.
        const int offsetCount = static_cast<int>(window.offsets.size());
        angles.assign(static_cast<size_t>(pixels) * offsetCount, -1.0f);  // < 0: no neighbour
        auto outputPixel = [&](int64_t row, int64_t col) -> int64_t {
          return row >= range.row0 && row < range.row0 + range.rows
                     ? (row - range.row0) * info.width + col
                     : -1;
        };
        inParallel(pixels, [&](int64_t first, int64_t last) {
          for (int64_t i = first; i < last; ++i) {
            const int64_t row = range.row0 + i / info.width;
            const int64_t col = i % info.width;
            const int64_t p = (row - rows.row0) * info.width + col;  // in the block
            if (!block.valid[p]) continue;
            const float* u = &block.unit[p * bands];
            for (int o = 0; o < offsetCount; ++o) {
              const Window::Offset& offset = window.offsets[o];
              bool reflectedRow = false, reflectedCol = false;
              const int64_t r =
                  neighbour(row, offset.dr, info.height, options.border, reflectedRow);
              const int64_t cc =
                  neighbour(col, offset.dc, info.width, options.border, reflectedCol);
              if (r < 0 || cc < 0) continue;
              const int64_t partner = reflectedRow || reflectedCol ? -1 : outputPixel(r, cc);
              if (!offset.forward && partner >= 0) continue;  // the partner measures it
              const int64_t q = (r - rows.row0) * info.width + cc;
              if (!block.valid[q]) continue;
              const float gamma = spectralAngle(u, &block.unit[q * bands], bands);
              angles[i * offsetCount + o] = gamma;
              if (partner >= 0) angles[partner * offsetCount + offset.reverse] = gamma;
            }
          }
        });
        std::vector<double> alphas(pixels, 0.0);
        inParallel(pixels, [&](int64_t first, int64_t last) {
          std::vector<double> displaced(bands);
          for (int64_t i = first; i < last; ++i) {
            const int64_t p = (range.row0 - rows.row0) * info.width + i;  // in the block
            if (!block.valid[p]) {
              std::fill(displaced.begin(), displaced.end(), outputNodata);
              alphaOut[i] = rhoOut[i] = nan;
            } else {
              double weights = 0, weighted = 0;
              for (int o = 0; o < offsetCount; ++o) {
                const float gamma = angles[i * offsetCount + o];
                if (gamma < 0) continue;
                weights += window.offsets[o].beta;
                weighted += window.offsets[o].beta * gamma;
              }
              const double alpha = weights > 0 ? weighted / weights : 0.0;
              const double shrink = 1 / ((1 + std::sqrt(alpha)) * (1 + std::sqrt(alpha)));
              const T* y = samples + p * bands;
              for (int b = 0; b < bands; ++b)
                displaced[b] = (static_cast<double>(y[b]) - c[b]) * shrink + c[b];
              alphaOut[i] = static_cast<float>(alpha);
              rhoOut[i] = static_cast<float>(1 / shrink);
              alphas[i] = alpha;
            }
            if (outputType == GDT_Float64)
              std::copy(displaced.begin(), displaced.end(),
                        reinterpret_cast<double*>(out) + i * bands);
            else
              std::transform(displaced.begin(), displaced.end(),
                             reinterpret_cast<float*>(out) + i * bands,
                             [](double v) { return static_cast<float>(v); });
          }
        });
        for (double a : alphas) alphaSum += a;
      });
    };
    stages.write = [&](const StripRange& range, const unsigned char* out) {
      writeStrip(output->dataset(), outputType, range.row0, range.rows, out);
      const auto* alphaOut = out + cubeBytes;
      if (alphaRaster)
        writeStrip(alphaRaster->dataset(), GDT_Float32, range.row0, range.rows, alphaOut);
      if (rhoRaster)
        writeStrip(rhoRaster->dataset(), GDT_Float32, range.row0, range.rows,
                   alphaOut + range.rows * info.width * 4);
    };
    pipeline.run(strips, stages, feedback, 20.0, 100.0);
  }
  input.reset();
  if (feedback.isCanceled()) throw Canceled();
  result.meanAlpha = alphaSum / static_cast<double>(count);
  output->commit();
  if (alphaRaster) alphaRaster->commit();
  if (rhoRaster) rhoRaster->commit();
  result.seconds = total.nsecsElapsed() * 1e-9;
  return result;
}

}  // namespace hyperstream
