// hyperstream pca, mnf and denoise: principal component analysis, the minimum noise fraction and
// the image rebuilt from the first components of either, file to file (one job: MNF is a PCA of
// the noise-whitened image).

#include "Commands.h"
#include "ConsoleFeedback.h"
#include "DeviceOption.h"

#include <QCommandLineParser>

#include <cstdio>
#include <string>

namespace hyperstream {

namespace {

// How many components: the same choices for the components and for denoising.
// What the count options say for one command: the verb, the options that choose the count by
// default, and what --variance is a share of.
struct CountHelp {
  QString verb, byDefault, share;
};

void addCountOptions(QCommandLineParser& parser, const CountHelp& help) {
  parser.addOptions({
      {"components",
       QString("Number of components %1: a number, 'all', or 'auto' (as many as the signal "
               "subspace has dimensions, estimated by HySime from the image's correlation); "
               "default: %2.")
           .arg(help.verb, help.byDefault),
       "N"},
      {"variance",
       QString("The fewest components whose cumulative share of %1 reaches PCT percent (default "
               "99).")
           .arg(help.share),
       "PCT"},
  });
}

// MNF's options: the noise estimate and the components by SNR.
QList<QCommandLineOption> noiseOptions() {
  return {
      {"noise",
       "MNF: the neighbour each pixel's noise is taken against: lowerright (default), "
       "lowerleft, right or lower.",
       "DIR"},
      {"snr", "MNF: the components whose SNR (eigenvalue - 1) is at least MIN.", "MIN"},
  };
}

QCommandLineOption matrixOption() {
  return {"matrix", "PCA: covariance (default) or correlation (standardised bands).", "TYPE"};
}

// The reports, the GPUs, then the shared options.
void addRunOptions(QCommandLineParser& parser) {
  parser.addOptions({
      {"stats", "Write the statistics report (JSON) here.", "FILE.json"},
      {"table", "Write one row per component (CSV) here.", "FILE.csv"},
      {"html", "Write the HTML report (scree plot, loadings, eigenvalues) here.", "FILE.html"},
  });
  addGpuAndSharedOptions(parser);
}

}  // namespace

void addGpuAndSharedOptions(QCommandLineParser& parser) {
  parser.addOptions({
      {"gpus",
       "Several GPUs at once: a list such as 0,1, or all. Each GPU takes a band of rows (and "
       "keeps it in its memory when it fits); the output is written as one file.",
       "LIST"},
      {"gpu-memory", "GPU memory budget in MiB (default: the GPU's free memory less a margin).",
       "MiB"},
  });
  addSharedOptions(
      parser, {"1-100,120,130-198", "the output",
               "auto (default: the GPU when one is usable and the image large enough for it, "
               "else the CPU), cpu, gpu or gpu:N (GPU number N; an error when no GPU is usable)."});
}

void readGpuOptions(const QCommandLineParser& parser, CovarianceOptions& options) {
  if (parser.isSet("gpus")) {
    if (parser.isSet("device")) invalid("device", "give --device or --gpus, not both");
    options.device = parseDevice("gpu:" + parser.value("gpus").toStdString());
  }
  if (parser.isSet("gpu-memory"))
    options.gpuMemoryBytes = mebibytes(parser.value("gpu-memory"), "gpu-memory");
}

namespace {

// The options of PCA or MNF, then the shared ones.
void addTransformOptions(QCommandLineParser& parser, Transform transform) {
  const bool mnf = transform == Transform::Mnf;
  addCountOptions(parser,
                  mnf ? CountHelp{"to write", "auto, unless --snr or --variance is given",
                                  "the summed SNR (eigenvalue - 1)"}
                      : CountHelp{"to write", "as many as --variance needs", "the variance"});
  parser.addOption({"type",
                    "Output type: float32 (default), float64, or byte (each component rescaled to "
                    "0-255 from its min/max).",
                    "TYPE"});
  if (mnf)
    parser.addOptions(noiseOptions());
  else
    parser.addOption(matrixOption());
  addRunOptions(parser);
}

// Denoising's: the transform, both transforms' own options, the count to keep.
void addDenoiseOptions(QCommandLineParser& parser) {
  parser.addOption(
      {"transform", "The transform whose first components are kept: pca (default) or mnf.", "T"});
  addCountOptions(parser, {"to keep", "auto, unless --snr (MNF) or --variance is given",
                           "the variance (PCA) or of the summed SNR (MNF)"});
  parser.addOption({"type",
                    "Output type: input (default: the input's data type, values rounded and "
                    "clamped to it, nodata kept), float32 or float64.",
                    "TYPE"});
  parser.addOptions(noiseOptions());
  parser.addOption(matrixOption());
  addRunOptions(parser);
}

double numberOption(const QCommandLineParser& parser, const QString& name, const char* example) {
  bool ok = false;
  const double value = parser.value(name).toDouble(&ok);
  if (!ok) invalid(name, QString("--%1 takes a number, e.g. %2").arg(name, example));
  return value;
}

// PCA's own option.
void readMatrixOption(const QCommandLineParser& parser, PcaOptions& options) {
  const QString matrix = parser.value("matrix");
  if (matrix == "correlation")
    options.matrix = MatrixType::Correlation;
  else if (!matrix.isEmpty() && matrix != "covariance")
    invalid("matrix", "--matrix is covariance or correlation, not '" + matrix + "'");
}

// MNF's own options.
void readNoiseOptions(const QCommandLineParser& parser, PcaOptions& options) {
  options.noise = parser.isSet("noise") ? parseNoiseDirection(parser.value("noise").toStdString())
                                        : NoiseDirection::LowerRight;
  if (!parser.isSet("snr")) return;
  if (parser.isSet("components") || parser.isSet("variance"))
    invalid("snr", "give one of --components, --variance and --snr");
  options.minSnr = numberOption(parser, "snr", "10");
}

void readPcaOptions(const QCommandLineParser& parser, const std::vector<OutputType>& types,
                    PcaOptions& options) {
  readSharedOptions(parser, options);
  if (parser.isSet("components") && parser.isSet("variance"))
    invalid("components", "give --components or --variance, not both");
  if (parser.isSet("components")) {
    const QString value = parser.value("components");
    options.components = value == "all"    ? kAllComponents
                         : value == "auto" ? kSignalSubspace
                                           : positiveInt(value, "components", kMaxBandCount);
  }
  if (parser.isSet("variance")) options.variancePercent = numberOption(parser, "variance", "99");
  options.outputType = outputTypeOption(parser, types);
  options.statsJson = parser.value("stats").toStdString();
  options.tableCsv = parser.value("table").toStdString();
  options.htmlReport = parser.value("html").toStdString();
  readGpuOptions(parser, options);
}

// MNF's and denoising's default count: the signal subspace (the variance's 99 % keeps too few
// components of a noisy scene, or too many of a clean one).
void countBySubspaceUnlessGiven(const QCommandLineParser& parser, PcaOptions& options) {
  if (!parser.isSet("components") && !parser.isSet("variance") && !parser.isSet("snr"))
    options.components = kSignalSubspace;
}

const char* const kPcaHelp =
    " pca INPUT OUTPUT [options]\n\n"
    "Principal component analysis of every valid pixel of INPUT, streamed in strips;\n"
    "writes the components to OUTPUT (GeoTIFF unless the extension or --format says\n"
    "otherwise), georeferencing and nodata kept.\n\n";
const char* const kMnfHelp =
    " mnf INPUT OUTPUT [options]\n\n"
    "Minimum noise fraction (noise-adjusted PCA) of every valid pixel of INPUT: the noise is\n"
    "estimated from the differences between each valid pixel and its valid neighbour (--noise),\n"
    "in the same pass over the image as the signal's statistics; components are ordered by\n"
    "signal-to-noise ratio. Streamed in strips; writes the components to OUTPUT, georeferencing\n"
    "and nodata kept.\n\n";

}  // namespace

// Denoising's transform and its own options; the other transform's are refused.
void readDenoiseTransform(const QCommandLineParser& parser, PcaOptions& options) {
  const QString transform = parser.value("transform");
  if (transform == "mnf") {
    if (parser.isSet("matrix")) invalid("matrix", "--matrix is PCA's (--transform pca)");
    readNoiseOptions(parser, options);
  } else if (transform.isEmpty() || transform == "pca") {
    if (parser.isSet("noise") || parser.isSet("snr"))
      invalid(parser.isSet("noise") ? "noise" : "snr",
              "--noise and --snr are MNF's (--transform mnf)");
    readMatrixOption(parser, options);
  } else {
    invalid("transform", "--transform is pca or mnf, not '" + transform + "'");
  }
}

const char* const kDenoiseHelp =
    " denoise INPUT OUTPUT [options]\n\n"
    "Fits a PCA or MNF (--transform) to every valid pixel of INPUT and writes each pixel rebuilt\n"
    "from its first components (mean + the components times their inverse loadings) to OUTPUT,\n"
    "in one job and without writing the components: the noise of the left-out components is\n"
    "gone. Streamed in strips; georeferencing, band descriptions and nodata kept.\n\n";

PcaCommand parsePcaArguments(const QStringList& arguments, const char* program, Transform transform,
                             const char* extraHelp) {
  QCommandLineParser parser;
  addTransformOptions(parser, transform);
  parseOrExit(parser, arguments,
              {{"INPUT", "Input raster (any GDAL format)."},
               {"OUTPUT", "Output raster of the components."}},
              (std::string("usage: ") + program +
               (transform == Transform::Mnf ? kMnfHelp : kPcaHelp) + extraHelp)
                  .c_str());
  PcaCommand command;
  readPcaOptions(parser, {OutputType::Float32, OutputType::Float64, OutputType::Byte},
                 command.options);
  if (transform == Transform::Mnf) {
    readNoiseOptions(parser, command.options);
    countBySubspaceUnlessGiven(parser, command.options);
  } else {
    readMatrixOption(parser, command.options);
  }
  command.quiet = parser.isSet("quiet");
  return command;
}

void printPcaSummary(const PcaResult& result, const PcaCommand& command) {
  const PcaOptions& options = command.options;
  const bool denoised = command.denoises;
  std::printf("%s%d %scomponent(s)%s, %.2f %% of the %s, %lld valid pixels, %.2f s on %s\n",
              denoised ? "denoised with " : "", result.components,
              denoised ? (options.noise ? "MNF " : "PCA ") : "",
              options.components == kSignalSubspace ? " (the signal subspace, HySime)" : "",
              result.model.cumulativePercent(result.components - 1),
              options.noise ? "summed SNR" : "variance",
              static_cast<long long>(result.model.validPixels), result.seconds.total,
              result.backend.c_str());
  const DeviceTimes& device = result.seconds.device;
  if (device.moments > 0)
    std::printf(
        "GPU: upload %.3f s (%.1f GB/s), moments %.1f ms, projection %.1f ms, download "
        "%.3f s%s\n",
        device.upload, device.upload > 0 ? device.uploadBytes / device.upload / 1e9 : 0.0,
        device.moments * 1e3, (device.projection + device.range) * 1e3, device.download,
        result.deviceResident ? ", cube resident on the GPU" : "");
  std::printf("%s %s (%s)\n", denoised ? "denoised:  " : "components:", options.output.c_str(),
              outputTypeName(result.outputType).c_str());
  if (!options.statsJson.empty()) std::printf("statistics: %s\n", options.statsJson.c_str());
  if (!options.tableCsv.empty()) std::printf("table:      %s\n", options.tableCsv.c_str());
  if (!options.htmlReport.empty()) std::printf("report:     %s\n", options.htmlReport.c_str());
}

int runTransformCommand(const QStringList& arguments, Transform transform) {
  const PcaCommand command = parsePcaArguments(arguments, "hyperstream", transform);
  const PcaResult result = runWithConsole(
      command.quiet, [&](Feedback& feedback) { return runPca(command.options, feedback); });
  if (!command.quiet) printPcaSummary(result, command);
  return 0;
}

PcaCommand parseDenoiseArguments(const QStringList& arguments, const char* program,
                                 const char* extraHelp) {
  QCommandLineParser parser;
  addDenoiseOptions(parser);
  parseOrExit(parser, arguments,
              {{"INPUT", "Input raster (any GDAL format)."},
               {"OUTPUT", "Output raster: the denoised image, one band per selected band."}},
              (std::string("usage: ") + program + kDenoiseHelp + extraHelp).c_str());
  PcaCommand command;
  command.denoises = true;
  readPcaOptions(parser, {OutputType::SameAsInput, OutputType::Float32, OutputType::Float64},
                 command.options);
  readDenoiseTransform(parser, command.options);
  countBySubspaceUnlessGiven(parser, command.options);
  command.quiet = parser.isSet("quiet");
  return command;
}

int runDenoiseCommand(const QStringList& arguments) {
  const PcaCommand command = parseDenoiseArguments(arguments, "hyperstream");
  const PcaResult result = runWithConsole(
      command.quiet, [&](Feedback& feedback) { return runDenoise(command.options, feedback); });
  if (!command.quiet) printPcaSummary(result, command);
  return 0;
}

int runPcaCommand(const QStringList& arguments) {
  return runTransformCommand(arguments, Transform::Pca);
}

int runMnfCommand(const QStringList& arguments) {
  return runTransformCommand(arguments, Transform::Mnf);
}

}  // namespace hyperstream
