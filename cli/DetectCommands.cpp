// hyperstream rx and hyperstream detect: anomaly and target detection from the image's own
// covariance (engine/detect/DetectJob.h), each column's (ColumnDetectJob.h) or each window's
// (LocalRxJob.h);
// hyperstream sam: the spectral angle mapper against a library (engine/detect/SamJob.h).

#include "Commands.h"
#include "ConsoleFeedback.h"
#include "detect/ColumnDetectJob.h"
#include "detect/DetectJob.h"
#include "detect/LocalRxJob.h"
#include "detect/SamJob.h"
#include "spectra/SpectralLibrary.h"

#include <QCommandLineParser>

#include <cstdio>

namespace hyperstream {

namespace {

void addDetectOptions(QCommandLineParser& parser) {
  parser.addOptions({
      {"components",
       "Score in the first N principal components of the covariance, 'all' (every band but the "
       "constant ones), or 'auto' (the default): as many as the scene has materials, counted as "
       "endmembers --count auto counts them, so that the noise of the other components does "
       "not drown the scores (on Jasper Ridge every band gives ACE and the matched filter a "
       "salt-and-pepper map). Not with --per-column, which scores every band.",
       "N|all|auto"},
      {"shrinkage",
       "Add S times the mean band variance to the covariance's diagonal (C + eps I) before it "
       "is inverted: for covariances of few pixels or many correlated bands. Default: with "
       "--per-column, each column's noise variance (half the mean squared difference of "
       "vertically adjacent pixels); with --window, the components' noise variance (HySime's "
       "noise of each band, carried into the components); else 0, the plain inverse (a "
       "singular covariance is refused).",
       "S"},
      {"type", "Output type: float32 (default) or float64 (scores are computed in float64).",
       "TYPE"},
      {"stats", "Write the covariance fit's statistics report (JSON) here.", "FILE.json"},
      {"html",
       "Write the HTML report here: each score band's preview, histogram and highest-scoring "
       "pixels, and the targets' spectra beside the image's mean.",
       "FILE.html"},
      {"per-column",
       "Take the mean and covariance of each image column (pushbroom sensors: each column is "
       "its own detector element, with its own gains), as methane mapping does; on the CPU or "
       "one GPU, with every column's statistics in memory (columns x bands^2 / 2 float64; on "
       "a GPU columns x bands^2 in its memory)."},
  });
  addGpuAndSharedOptions(parser);
}

void readDetectOptions(const QCommandLineParser& parser, DetectOptions& options) {
  readSharedOptions(parser, options);
  // Each column's statistics take every band.
  options.detector.components = parser.isSet("per-column") ? 0 : kSceneMaterials;
  if (parser.isSet("components")) {
    const QString value = parser.value("components");
    options.detector.components = value == "all" ? 0
                                  : value == "auto"
                                      ? kSceneMaterials
                                      : positiveInt(value, "components", kMaxBandCount);
  }
  if (parser.isSet("shrinkage"))
    options.detector.shrinkage = nonNegativeNumber(parser.value("shrinkage"), "shrinkage");
  options.outputType = outputTypeOption(parser, {OutputType::Float32, OutputType::Float64});
  options.statsJson = parser.value("stats").toStdString();
  options.htmlReport = parser.value("html").toStdString();
  readGpuOptions(parser, options);
}

void printDetectSummary(const DetectResult& result, const DetectOptions& options) {
  const Detector& detector = result.detector;
  std::printf(
      "%s over %d principal component(s)%s, %lld valid pixels, %.2f s on %s\n",
      detectMethodName(options.detector.method).c_str(), detector.components,
      detector.epsilon > 0 ? (", shrinkage " + std::to_string(detector.epsilon)).c_str() : "",
      static_cast<long long>(result.model.validPixels), result.seconds.total,
      result.backend.c_str());
  std::printf("scores:     %s (%s", options.output.c_str(),
              outputTypeName(result.outputType).c_str());
  for (const std::string& name : detector.bandNames) std::printf("; %s", name.c_str());
  std::printf(")\n");
  if (!options.statsJson.empty()) std::printf("statistics: %s\n", options.statsJson.c_str());
  if (!options.htmlReport.empty()) std::printf("report:     %s\n", options.htmlReport.c_str());
}

// Each column's own statistics (engine/detect/ColumnDetectJob.h).
int runColumnJob(const DetectOptions& options, bool quiet) {
  const ColumnDetectOptions column = perColumnOptions(options);
  ConsoleFeedback feedback(quiet);
  const ColumnDetectResult result = runColumnDetection(column, feedback);
  feedback.finish();
  if (quiet) return 0;
  std::printf("%s with each column's statistics, %lld valid pixels, %.2f s on %s\n",
              detectMethodName(column.method).c_str(), static_cast<long long>(result.validPixels),
              result.seconds, result.backend.c_str());
  if (result.device.moments > 0)
    std::printf(
        "GPU: upload %.3f s, sums %.1f ms, scores %.1f ms, download %.3f s; the columns' "
        "factors on the CPU %.3f s\n",
        result.device.upload, result.device.moments * 1e3, result.device.projection * 1e3,
        result.device.download, result.fitSeconds);
  if (!column.shrinkage)
    std::printf("C + eps I:  eps = each column's noise variance, %.4g on average\n",
                result.meanEpsilon);
  std::printf("scores:     %s (%s", options.output.c_str(),
              outputTypeName(options.outputType).c_str());
  for (const std::string& name : result.bandNames) std::printf("; %s", name.c_str());
  std::printf(")\n");
  if (!options.htmlReport.empty()) std::printf("report:     %s\n", options.htmlReport.c_str());
  return 0;
}

// Each pixel against its own neighbourhood (engine/detect/LocalRxJob.h).
int runLocalRxJob(const QCommandLineParser& parser, const DetectOptions& options) {
  if (parser.isSet("per-column"))
    invalid("window", "--window and --per-column are two backgrounds: choose one");
  if (parser.value("components") == "all")
    invalid("components",
            "local RX scores in 2 to " + QString::number(kMaxLocalComponents) +
                " principal components or auto (each pixel's window covariance is factored)");
  const int window = positiveInt(parser.value("window"), "window", kMaxWindow);
  const int guard =
      parser.isSet("guard") ? positiveInt(parser.value("guard"), "guard", kMaxWindow) : 1;
  const LocalRxOptions local = localRxOptions(options, window, guard);
  const bool quiet = parser.isSet("quiet");
  ConsoleFeedback feedback(quiet);
  const LocalRxResult result = runLocalRx(local, feedback);
  feedback.finish();
  if (quiet) return 0;
  std::printf(
      "local RX (window %d, guard %d) in %d principal component(s), %lld valid pixels "
      "(%lld left unscored), %.2f s (components %.2f s): %s\n",
      local.window, local.guard, result.components, static_cast<long long>(result.validPixels),
      static_cast<long long>(result.unscoredPixels), result.seconds, result.pcaSeconds,
      result.backend.c_str());
  if (result.noise > 0)
    std::printf("C + eps I:  eps = the components' noise variance, %.4g\n", result.noise);
  std::printf("scores:     %s (%s)\n", options.output.c_str(),
              outputTypeName(options.outputType).c_str());
  if (!options.htmlReport.empty()) std::printf("report:     %s\n", options.htmlReport.c_str());
  return 0;
}

int runDetectJob(const DetectOptions& options, bool perColumn, bool quiet) {
  if (perColumn) return runColumnJob(options, quiet);
  const DetectResult result =
      runWithConsole(quiet, [&](Feedback& feedback) { return runDetection(options, feedback); });
  if (!quiet) printDetectSummary(result, options);
  return 0;
}

const char* const kRxHelp =
    "usage: hyperstream rx INPUT OUTPUT [options]\n\n"
    "The Reed-Xiaoli anomaly detector: each valid pixel's Mahalanobis distance\n"
    "(x - m)' C^-1 (x - m) from the mean m and covariance C of the image's valid pixels\n"
    "(one pass for the statistics, one for the scores; streamed in strips). Writes one band\n"
    "of scores to OUTPUT (GeoTIFF unless the extension or --format says otherwise),\n"
    "georeferencing and nodata kept. Constant bands are left out. For a background of\n"
    "Gaussian pixels the scores follow a chi-square law with as many degrees of freedom as\n"
    "components: large scores are anomalies. With --window, each pixel's mean and\n"
    "covariance are those of its own neighbourhood (local, dual-window RX).\n\n";

const char* const kDetectHelp =
    "usage: hyperstream detect INPUT TARGETS.csv OUTPUT --method mf|ace|cem [options]\n\n"
    "Target detection with the image's own statistics: one band of scores per target of\n"
    "TARGETS.csv (the table `hyperstream endmembers` writes: id,row,col, then a column per\n"
    "band, named as that table names the image's bands; a table of other names needs a\n"
    "column per selected band, in order), or of a spectral library on wavelengths (an ENVI\n"
    ".sli, USGS splib07 ASCII with --target-wavelengths) resampled to the bands as sam\n"
    "does. With m and C the mean and covariance of the valid pixels and t = target - m:\n"
    "  mf   the matched filter  t' C^-1 (x - m) / t' C^-1 t  (about 1 where the pixel is the\n"
    "       target, 0 at the background's mean: in units of the target's abundance)\n"
    "  ace  the adaptive cosine estimator  (t' C^-1 (x - m))^2 / ((t' C^-1 t)(x - m)' C^-1\n"
    "       (x - m)), in [0, 1]: the squared cosine of the whitened angle\n"
    "  cem  constrained energy minimisation  t' R^-1 x / t' R^-1 t, R the correlation matrix\n"
    "       (1/n) sum x x' and t the target itself (no mean taken)\n"
    "Constant bands are left out. Streamed in strips; georeferencing and nodata kept.\n"
    "With --per-column, m and C are each image column's own (mf, ace and rx).\n\n";

const char* const kSamDeviceHelp =
    "auto (default: the GPU when one is usable and the image large enough for it, else the "
    "CPU), cpu, gpu or gpu:N.";

const char* const kSamHelp =
    "usage: hyperstream sam INPUT LIBRARY OUTPUT [options]\n\n"
    "The spectral angle mapper: each valid pixel's angle (radians) to each spectrum of\n"
    "LIBRARY, and a class map of the nearest spectrum (UInt16, 1 for the library's first\n"
    "spectrum; 0 is nodata: invalid pixels, and pixels farther than --max-angle from every\n"
    "spectrum). The angle does not depend on scale: the library may be reflectance in any\n"
    "units. LIBRARY is one of\n"
    "  a CSV table as hyperstream endmembers writes it (a column per band, named as the\n"
    "    image's bands),\n"
    "  an ENVI spectral library (.sli and its .hdr, with wavelengths),\n"
    "  USGS splib07 ASCII spectra (a .txt file, or a folder of them, measured by one\n"
    "    spectrometer; --library-wavelengths gives that spectrometer's wavelength file).\n"
    "Spectra on wavelengths are resampled to the image's bands by each band's Gaussian\n"
    "response (its wavelength and FWHM from the image's metadata). Streamed in strips;\n"
    "georeferencing kept.\n\n";

}  // namespace

int runSamCommand(const QStringList& arguments) {
  QCommandLineParser parser;
  parser.addOptions({
      {"library-wavelengths",
       "USGS ASCII spectra: the wavelength file of the spectrometer they were measured with "
       "(e.g. splib07a_Wavelengths_ASD_0.35-2.5_microns_2151_ch.txt).",
       "FILE"},
      {"max-angle",
       "Leave a pixel unclassified (0) where its smallest angle exceeds this, in radians "
       "(default: none; ENVI's default is 0.1).",
       "RADIANS"},
      {"angle", "Also write each pixel's angle to its class (one band) here.", "FILE"},
      {"angles", "Also write each pixel's angle to every spectrum (a band each) here.", "FILE"},
      {"counts", "Write the classes' pixel counts (CSV) here.", "FILE.csv"},
      {"html",
       "Write the HTML report here: the classes' counts and mean angles, the class map, the "
       "angles' histogram and the library's spectra on the image's bands.",
       "FILE.html"},
      {"type", "Angles: float32 (default) or float64 (computed in float64).", "TYPE"},
  });
  addSharedOptions(parser, {"1-100,120", "the outputs", kSamDeviceHelp});
  parseOrExit(parser, arguments,
              {{"INPUT", "Input raster (any GDAL format)."},
               {"LIBRARY", "Reference spectra: CSV, ENVI .sli, USGS .txt or a folder of them."},
               {"OUTPUT", "Output raster: the class map."}},
              kSamHelp);
  SamOptions options;
  readSharedOptions(parser, options);
  options.library.library = parser.positionalArguments()[1].toStdString();
  options.output = parser.positionalArguments()[2].toStdString();
  options.library.wavelengths = parser.value("library-wavelengths").toStdString();
  if (parser.isSet("max-angle"))
    options.maxAngle = nonNegativeNumber(parser.value("max-angle"), "max-angle");
  options.angleOutput = parser.value("angle").toStdString();
  options.anglesOutput = parser.value("angles").toStdString();
  options.countsCsv = parser.value("counts").toStdString();
  options.htmlReport = parser.value("html").toStdString();
  options.outputType = outputTypeOption(parser, {OutputType::Float32, OutputType::Float64});
  const bool quiet = parser.isSet("quiet");
  ConsoleFeedback feedback(quiet);
  const SamResult result = runSpectralAngles(options, feedback);
  feedback.finish();
  if (quiet) return 0;
  std::printf("%zu spectra (%s), %lld valid pixels, %.2f s on %s\n", result.library.size(),
              result.libraryFormat.c_str(), static_cast<long long>(result.validPixels),
              result.seconds, result.backend.c_str());
  for (size_t k = 0; k < result.classCounts.size(); ++k)
    std::printf("  class %zu %s: %lld pixels\n", k,
                k == 0 ? "(unclassified)" : result.library[k - 1].name.c_str(),
                static_cast<long long>(result.classCounts[k]));
  std::printf("classes: %s\n", options.output.c_str());
  if (!options.angleOutput.empty()) std::printf("angle:   %s\n", options.angleOutput.c_str());
  if (!options.anglesOutput.empty()) std::printf("angles:  %s\n", options.anglesOutput.c_str());
  if (!options.countsCsv.empty()) std::printf("counts:  %s\n", options.countsCsv.c_str());
  if (!options.htmlReport.empty()) std::printf("report:  %s\n", options.htmlReport.c_str());
  return 0;
}

int runRxCommand(const QStringList& arguments) {
  QCommandLineParser parser;
  parser.addOptions({
      {"window",
       "Local RX: each pixel against the valid pixels of the N x N window centred on it "
       "(odd, 3-255) rather than the whole image, in the first K principal components "
       "(--components, as many as the scene has materials by default; all bands are not "
       "offered). The components are "
       "written to a temporary file beside OUTPUT (K x 8 bytes a pixel); the windows run on "
       "the device chosen (--device), as the components.",
       "N"},
      {"guard",
       "Local RX: leave the G x G square around each pixel out of its background (odd, "
       "smaller than the window; default 1, the pixel itself), so that a target larger than "
       "a pixel does not hide in its own statistics.",
       "G"},
  });
  addDetectOptions(parser);
  parseOrExit(parser, arguments,
              {{"INPUT", "Input raster (any GDAL format)."},
               {"OUTPUT", "Output raster: one band of RX scores."}},
              kRxHelp);
  DetectOptions options;
  readDetectOptions(parser, options);
  options.detector.method = DetectMethod::Rx;
  if (parser.isSet("window")) return runLocalRxJob(parser, options);
  if (parser.isSet("guard")) invalid("guard", "--guard goes with --window (local RX)");
  return runDetectJob(options, parser.isSet("per-column"), parser.isSet("quiet"));
}

int runDetectCommand(const QStringList& arguments) {
  QCommandLineParser parser;
  parser.addOption({"method", "mf (matched filter), ace or cem; required.", "METHOD"});
  parser.addOption(
      {"target-wavelengths",
       "USGS ASCII targets: the wavelength file of the spectrometer that measured them.", "FILE"});
  parser.addOption(
      {"target-mode",
       "spectrum (default: each target is a spectrum in the image's units) or absorption (each "
       "target is a unit absorption spectrum k, e.g. methane's per ppm m: the target signature "
       "is -m * k, the background's mean times the absorption, and the matched filter's score "
       "the enhancement in k's units; mf and ace).",
       "MODE"});
  addDetectOptions(parser);
  parseOrExit(parser, arguments,
              {{"INPUT", "Input raster (any GDAL format)."},
               {"TARGETS",
                "The targets' spectra: CSV (as hyperstream endmembers writes), or a spectral "
                "library on wavelengths (ENVI .sli, USGS .txt), resampled to the bands."},
               {"OUTPUT", "Output raster: one band of scores per target."}},
              kDetectHelp);
  DetectOptions options;
  readDetectOptions(parser, options);
  options.output = parser.positionalArguments()[2].toStdString();
  if (!parser.isSet("method")) invalid("method", "--method is required: mf, ace or cem");
  options.detector.method = parseDetectMethod(parser.value("method").toLower().toStdString());
  if (options.detector.method == DetectMethod::Rx)
    invalid("method", "--method is mf, ace or cem (RX has its own command: hyperstream rx)");
  options.targetTable = readTargets({parser.positionalArguments()[1].toStdString(),
                                     parser.value("target-wavelengths").toStdString(), ""});
  const QString mode = parser.value("target-mode").toLower();
  if (!mode.isEmpty() && mode != "spectrum" && mode != "absorption")
    invalid("target-mode", "--target-mode is spectrum or absorption");
  options.detector.absorption = mode == "absorption";
  return runDetectJob(options, parser.isSet("per-column"), parser.isSet("quiet"));
}

}  // namespace hyperstream
