#include "synth/Synth.h"

#include "core/Error.h"
#include "io/OutputCheck.h"
#include "io/PendingRaster.h"
#include "io/Raster.h"
#include "io/SpectralMetadata.h"
#include "io/TextFile.h"

#include <ogr_spatialref.h>

#include <QDir>
#include <QFileInfo>
#include <QThreadPool>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <random>

namespace hyperstream {

namespace {

constexpr double kPi = 3.14159265358979323846;

double gaussian(double x, double center, double width) {
  const double t = (x - center) / width;
  return std::exp(-0.5 * t * t);
}

double sigmoid(double x, double center, double width) {
  return 1.0 / (1.0 + std::exp(-(x - center) / width));
}

// Multiplies in an absorption feature of the given depth, centre and width (micrometres).
double absorb(double reflectance, double um, double center, double width, double depth) {
  return reflectance * (1.0 - depth * gaussian(um, center, width));
}

double vegetation(double um) {
  double r = 0.04 + 0.06 * gaussian(um, 0.55, 0.035) + 0.44 * sigmoid(um, 0.715, 0.018);
  r -= 0.2 * sigmoid(um, 1.3, 0.08);  // leaf water lowers the SWIR
  r = absorb(r, um, 0.97, 0.03, 0.08);
  r = absorb(r, um, 1.2, 0.04, 0.15);
  r = absorb(r, um, 1.45, 0.06, 0.45);
  r = absorb(r, um, 1.94, 0.08, 0.6);
  return std::max(0.01, r);
}

double soil(double um) {
  double r = 0.08 + 0.3 * sigmoid(um, 0.7, 0.25) - 0.06 * sigmoid(um, 2.1, 0.2);
  r = absorb(r, um, 0.9, 0.08, 0.08);   // ferric iron
  r = absorb(r, um, 1.42, 0.04, 0.12);  // bound water
  r = absorb(r, um, 1.92, 0.05, 0.15);
  r = absorb(r, um, 2.2, 0.03, 0.1);  // clay Al-OH
  return r;
}

double water(double um) {
  return 0.01 + 0.05 * std::exp(-(um - 0.4) / 0.15) * (um < 0.9 ? 1 : 0.2);
}

double clayMineral(double um) {
  double r = 0.35 + 0.3 * sigmoid(um, 0.5, 0.08);
  r = absorb(r, um, 1.4, 0.03, 0.25);
  r = absorb(r, um, 2.165, 0.015, 0.2);  // kaolinite doublet
  r = absorb(r, um, 2.205, 0.02, 0.3);
  return r;
}

double asphalt(double um) {
  return 0.06 + 0.05 * (um - 0.4) / 2.1 + 0.01 * gaussian(um, 1.7, 0.3);
}

// A smooth field from a few low-frequency plane waves.
struct SmoothField {
  struct Wave {
    double fx, fy, phase, amplitude;
  };
  std::vector<Wave> waves;
  SmoothField(std::mt19937_64& random, double shortestPeriod, int count) {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int i = 0; i < count; ++i) {
      const double period = shortestPeriod * (1.0 + 6.0 * unit(random));
      const double angle = 2 * kPi * unit(random);
      const double f = 2 * kPi / period;
      waves.push_back({f * std::cos(angle), f * std::sin(angle), 2 * kPi * unit(random),
                       1.0 / (1.0 + i * 0.3)});
    }
  }
  double operator()(double x, double y) const {
    double v = 0;
    for (const Wave& w : waves) v += w.amplitude * std::sin(w.fx * x + w.fy * y + w.phase);
    return v;
  }
};

// The first endmembers, in this order; later ones are made up.
constexpr double (*kLibrarySpectra[])(double um) = {vegetation, soil, water, clayMineral, asphalt};

template <class T>
T toSample(double value) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(value);
  } else {
    const double lo = std::numeric_limits<T>::lowest() + 1.0;  // keep clear of typical nodata
    const double hi = std::numeric_limits<T>::max() - 1.0;
    return static_cast<T>(std::clamp(std::round(value), lo, hi));
  }
}

}  // namespace

std::vector<double> endmemberSpectra(int endmembers, const std::vector<double>& wavelengthsNm,
                                     uint64_t seed) {
  const size_t n = wavelengthsNm.size();
  std::vector<double> spectra(static_cast<size_t>(endmembers) * n);
  std::mt19937_64 random(seed ^ 0x9e3779b97f4a7c15ull);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int e = 0; e < endmembers; ++e) {
    // Extra endmembers: a smooth continuum with a few random absorption features.
    const double level = 0.1 + 0.4 * unit(random), slope = 0.2 * (unit(random) - 0.5);
    std::vector<std::array<double, 3>> features;
    features.reserve(3);
    for (int f = 0; f < 3; ++f)
      features.push_back({0.5 + 2.0 * unit(random), 0.02 + 0.1 * unit(random), 0.4 * unit(random)});
    for (size_t i = 0; i < n; ++i) {
      const double um = wavelengthsNm[i] / 1000.0;
      double r = 0;
      if (e < static_cast<int>(std::size(kLibrarySpectra))) {
        r = kLibrarySpectra[e](um);
      } else {
        r = level + slope * (um - 1.45);
        for (const auto& feature : features) r = absorb(r, um, feature[0], feature[1], feature[2]);
      }
      spectra[static_cast<size_t>(e) * n + i] = std::clamp(r, 0.005, 0.95);
    }
  }
  return spectra;
}

namespace {

void checkOptions(const SynthOptions& options) {
  if (options.rows < 1 || options.cols < 1 || options.rows > INT32_MAX || options.cols > INT32_MAX)
    throw Error("ROWS", "rows and columns must be between 1 and 2^31-1");
  if (options.bands < 2 || options.bands > 65536)
    throw Error("BANDS", "a scene has 2 to 65536 bands (GDAL's limit)");
  if (options.endmembers < 2 || options.endmembers > 32)
    throw Error("ENDMEMBERS", "between 2 and 32 endmembers");
  if (options.type != GDT_Int16 && options.type != GDT_UInt16 && options.type != GDT_Float32)
    throw Error("TYPE", "the scene type must be int16, uint16 or float32");
  if (options.deadBands < -1)
    throw Error("DEAD_BANDS", "the number of dead bands cannot be negative");
  if (options.border < -1) throw Error("BORDER", "the border width cannot be negative");
  if (!(options.shading >= 0 && options.shading < 1))
    throw Error("SHADING", "the shading is a fraction from 0 to below 1");
  if (options.purePatch < 0) throw Error("PURE_PATCHES", "the patch side cannot be negative");
}

// Dead bands: the `count` nearest the centres of the atmospheric water-vapour absorptions.
std::vector<int> deadBands(const std::vector<double>& wavelengthsNm, int count) {
  const double centres[] = {1380.0, 1880.0, 1400.0, 1900.0, 1360.0, 1860.0, 2500.0, 400.0};
  const int bands = static_cast<int>(wavelengthsNm.size());
  std::vector<char> taken(bands, 0);
  std::vector<int> dead;  // 1-based
  for (int d = 0; d < count; ++d) {
    int best = -1;
    for (int b = 0; b < bands; ++b)
      if (!taken[b] && (best < 0 || std::abs(wavelengthsNm[b] - centres[d % 8]) <
                                        std::abs(wavelengthsNm[best] - centres[d % 8])))
        best = b;
    taken[best] = 1;
    dead.push_back(best + 1);
  }
  std::sort(dead.begin(), dead.end());
  return dead;
}

// The scene: endmember spectra mixed by smooth abundance fields, shaded, with noise, dead bands
// and a nodata border. Each row comes out the same whatever thread fills it.
class Scene {
 public:
  Scene(const SynthOptions& options, SynthResult& result) : options_(options) {
    const int bands = options.bands;
    for (int b = 0; b < bands; ++b)
      result.wavelengthsNm.push_back(400.0 + 2100.0 * b / std::max(1, bands - 1));
    spectra_ = endmemberSpectra(options.endmembers, result.wavelengthsNm, options.seed);
    const int dead = options.deadBands >= 0
                         ? std::min(options.deadBands, bands - 2)
                         : std::max(1, static_cast<int>(std::lround(bands / 56.0)));
    result.deadBands = deadBands(result.wavelengthsNm, dead);
    isDead_.assign(bands, 0);
    for (const int b : result.deadBands) isDead_[b - 1] = 1;
    border_ = options.border >= 0 ? options.border
                                  : std::max<int64_t>(1, std::min(options.rows, options.cols) / 64);
    result.nodata = nodata_ = options.type == GDT_UInt16 ? 65535.0 : -9999.0;
    std::mt19937_64 random(options.seed);
    fields_.reserve(options.endmembers);
    const double scale = std::max<double>(16.0, std::min(options.rows, options.cols) / 8.0);
    for (int e = 0; e < options.endmembers; ++e) fields_.emplace_back(random, scale, 6);
    shading_ = std::make_unique<SmoothField>(random, scale * 2, 3);
    placePatches();
    result.noise = noise_ = options.snrDb > 0 ? noiseForSnr(options.snrDb) : options.noise;
  }

  const std::vector<double>& spectra() const { return spectra_; }

  // Row `row`'s pixels into `out` (cols x bands) and, when not null, its abundances into
  // `abundances` (cols x endmembers).
  template <class T>
  void fillRow(int64_t row, T* out, float* abundances) const {
    const int bands = options_.bands, endmembers = options_.endmembers;
    std::mt19937_64 noise(options_.seed * 0x100000001b3ull + static_cast<uint64_t>(row));
    std::normal_distribution<double> normal(0.0, noise_);
    std::vector<double> abundance(endmembers);
    const bool borderRow = row < border_ || row >= options_.rows - border_;
    for (int64_t col = 0; col < options_.cols; ++col) {
      T* pixel = out + col * bands;
      mixture(row, col, abundance);
      if (abundances)
        for (int e = 0; e < endmembers; ++e)
          abundances[col * endmembers + e] = static_cast<float>(abundance[e]);
      if (borderRow || col < border_ || col >= options_.cols - border_) {
        std::fill(pixel, pixel + bands, static_cast<T>(nodata_));
        continue;
      }
      for (int b = 0; b < bands; ++b)
        pixel[b] = isDead_[b] ? T(0) : toSample<T>(signal(row, col, abundance, b) + normal(noise));
    }
  }

 private:
  // Band b's noise-free value at a pixel of these abundances, in DN.
  double signal(int64_t row, int64_t col, const std::vector<double>& abundance, int b) const {
    const double brightness =
        10000.0 *
        (1.0 + options_.shading * (*shading_)(static_cast<double>(col), static_cast<double>(row)));
    double r = 0;
    for (size_t e = 0; e < abundance.size(); ++e)
      r += abundance[e] * spectra_[e * options_.bands + b];
    return brightness * r;
  }

  // The noise's standard deviation for `snrDb` over the scene: the mean power of the noise-free
  // signal (live bands, a grid of pixels inside the border) over 10^(snr/10).
  double noiseForSnr(double snrDb) const {
    double power = 0;
    int64_t values = 0;
    std::vector<double> abundance(options_.endmembers);
    constexpr int64_t kGrid = 64;
    for (int64_t i = 0; i < kGrid; ++i)
      for (int64_t j = 0; j < kGrid; ++j) {
        const int64_t row = border_ + (options_.rows - 2 * border_) * (2 * i + 1) / (2 * kGrid);
        const int64_t col = border_ + (options_.cols - 2 * border_) * (2 * j + 1) / (2 * kGrid);
        mixture(row, col, abundance);
        for (int b = 0; b < options_.bands; ++b) {
          if (isDead_[b]) continue;
          const double v = signal(row, col, abundance, b);
          power += v * v;
          ++values;
        }
      }
    return std::sqrt(power / std::max<int64_t>(1, values) / std::pow(10.0, snrDb / 10));
  }

  // Pure patches: squares of side purePatch in a grid from the border's corner, a side apart.
  void placePatches() {
    const int64_t side = options_.purePatch;
    if (side == 0) return;
    const int64_t perRow = std::max<int64_t>(0, (options_.cols - 2 * border_ - side) / (2 * side));
    const int64_t rows = perRow > 0 ? (options_.endmembers + perRow - 1) / perRow : 0;
    if (perRow == 0 || border_ + side + 2 * side * rows > options_.rows - border_)
      throw Error("PURE_PATCHES", "the scene is too small for " +
                                      std::to_string(options_.endmembers) + " pure patches of " +
                                      std::to_string(side) + " pixels");
    for (int e = 0; e < options_.endmembers; ++e)
      patches_.push_back(
          {border_ + side + 2 * side * (e / perRow), border_ + side + 2 * side * (e % perRow)});
  }

  // The abundances at a pixel: one endmember inside its pure patch, else a softmax of the fields,
  // summing to one.
  void mixture(int64_t row, int64_t col, std::vector<double>& abundance) const {
    for (size_t e = 0; e < patches_.size(); ++e) {
      const auto [top, left] = patches_[e];
      if (row >= top && row < top + options_.purePatch && col >= left &&
          col < left + options_.purePatch) {
        std::fill(abundance.begin(), abundance.end(), 0.0);
        abundance[e] = 1;
        return;
      }
    }
    double total = 0;
    for (size_t e = 0; e < abundance.size(); ++e) {
      abundance[e] = std::exp(2.5 * fields_[e](static_cast<double>(col), static_cast<double>(row)));
      total += abundance[e];
    }
    for (double& a : abundance) a /= total;
  }

  const SynthOptions& options_;
  std::vector<double> spectra_;
  std::vector<char> isDead_;
  int64_t border_ = 0;
  double nodata_ = 0;
  double noise_ = 0;
  std::vector<std::pair<int64_t, int64_t>> patches_;  // top row, left column
  std::vector<SmoothField> fields_;
  std::unique_ptr<SmoothField> shading_;
};

// The scene's grid: 20 m pixels in UTM 10N.
void georeference(GDALDataset& dataset) {
  double transform[6] = {560000.0, 20.0, 0.0, 4140000.0, 0.0, -20.0};
  GDALSetGeoTransform(GDALDataset::ToHandle(&dataset), transform);
  OGRSpatialReference utm;
  if (utm.importFromEPSG(32610) == OGRERR_NONE) dataset.SetSpatialRef(&utm);
}

// The grid, the seed, and wavelengths and nodata on every band.
void describeScene(GDALDataset& dataset, const SynthOptions& options, const SynthResult& result) {
  georeference(dataset);
  dataset.SetMetadataItem("HYPERSTREAM_SYNTH_SEED", std::to_string(options.seed).c_str());
  BandSpectra spectra;
  for (int b = 0; b < options.bands; ++b) {
    GDALRasterBand* band = dataset.GetRasterBand(b + 1);
    const QString nm = QString::number(result.wavelengthsNm[b], 'f', 1);
    band->SetDescription(
        ("Band " + std::to_string(b + 1) + " (" + nm.toStdString() + " nm)").c_str());
    spectra.wavelengths.push_back(nm.toDouble());
    spectra.fwhm.push_back(std::nan(""));
    band->SetNoDataValue(result.nodata);
  }
  writeSpectralMetadata(dataset, spectra);  // an ENVI scene's header lists them too
}

QByteArray endmembersCsv(const std::vector<double>& wavelengthsNm,
                         const std::vector<double>& spectra, int endmembers) {
  const size_t bands = wavelengthsNm.size();
  QByteArray csv = "wavelength_nm";
  for (int e = 0; e < endmembers; ++e) csv += ",endmember_" + QByteArray::number(e + 1);
  csv += "\n";
  for (size_t b = 0; b < bands; ++b) {
    csv += QByteArray::number(wavelengthsNm[b], 'f', 2);
    for (int e = 0; e < endmembers; ++e)
      csv += "," + QByteArray::number(spectra[static_cast<size_t>(e) * bands + b], 'g', 10);
    csv += "\n";
  }
  return csv;
}

// Fills and writes the scene (and the abundances, when `truth`) in strips of 64 MiB, each
// strip's rows on the threads of a pool.
void writeScene(const Scene& scene, const SynthOptions& options, PendingRaster& raster,
                PendingRaster* truth, Feedback& feedback) {
  const int bands = options.bands, endmembers = options.endmembers;
  const int64_t stripRows = std::max<int64_t>(1, (64ll << 20) / (options.cols * bands * 4));
  const int sampleSize = typeSize(options.type);
  std::vector<unsigned char> strip(static_cast<size_t>(stripRows * options.cols * bands) *
                                   sampleSize);
  std::vector<float> abundances(truth ? static_cast<size_t>(stripRows * options.cols) * endmembers
                                      : 0);
  QThreadPool pool;
  for (int64_t row0 = 0; row0 < options.rows; row0 += stripRows) {
    if (feedback.isCanceled()) throw Canceled();
    const int64_t rows = std::min(stripRows, options.rows - row0);
    for (int64_t row = row0; row < row0 + rows; ++row)
      pool.start([&, row, row0] {
        const int64_t at = (row - row0) * options.cols;
        float* rowAbundances = truth ? abundances.data() + at * endmembers : nullptr;
        auto fill = [&](auto sample) {
          using T = decltype(sample);
          scene.fillRow(row, reinterpret_cast<T*>(strip.data()) + at * bands, rowAbundances);
        };
        if (options.type == GDT_Int16)
          fill(int16_t{});
        else if (options.type == GDT_UInt16)
          fill(uint16_t{});
        else
          fill(float{});
      });
    pool.waitForDone();
    raster.write(row0, rows, strip.data(), feedback);
    if (truth) truth->write(row0, rows, abundances.data(), feedback);
    feedback.setProgress(100.0 * static_cast<double>(row0 + rows) / options.rows);
  }
}

SynthResult synthesize(const SynthOptions& options, Feedback& feedback) {
  checkOptions(options);
  const RasterFormat format{outputDriver(options.output, options.format), {}};
  const RasterFormat truthFormat{GetGDALDriverManager()->GetDriverByName("GTiff"), {}};
  SynthResult result;
  const QFileInfo outInfo(QString::fromStdString(options.output));
  const QString stem = outInfo.absoluteDir().filePath(outInfo.completeBaseName());
  if (options.writeTruth) {
    result.abundancesPath = (stem + "_abundances.tif").toStdString();
    result.endmembersPath = (stem + "_endmembers.csv").toStdString();
  }
  {
    OutputCheck outputs({}, feedback);
    outputs.raster("OUTPUT", options.output, format, options.bands, options.type);
    if (options.writeTruth) {
      outputs.raster("OUTPUT", result.abundancesPath, truthFormat, options.endmembers, GDT_Float32);
      outputs.file("OUTPUT", result.endmembersPath);
    }
  }
  const Scene scene(options, result);
  PendingRaster raster(options.output, format, options.cols, options.rows, options.bands,
                       options.type);
  std::unique_ptr<PendingRaster> truth;
  if (options.writeTruth) {
    truth = std::make_unique<PendingRaster>(result.abundancesPath, truthFormat, options.cols,
                                            options.rows, options.endmembers, GDT_Float32);
    georeference(truth->dataset());
  }
  describeScene(raster.dataset(), options, result);
  writeScene(scene, options, raster, truth.get(), feedback);
  if (truth) {
    saveFileAtomically(result.endmembersPath,
                       endmembersCsv(result.wavelengthsNm, scene.spectra(), options.endmembers),
                       "OUTPUT");
    truth->commit();
  }
  raster.commit();
  return result;
}

}  // namespace

SynthResult synthesizeScene(const SynthOptions& options, Feedback& feedback) {
  try {
    return synthesize(options, feedback);
  } catch (...) {
    rethrowAsJobError(0);
  }
}

}  // namespace hyperstream
