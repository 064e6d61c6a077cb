// hyperstream: the command line of the Hyperstream engine.

#include "Arguments.h"
#include "ConsoleFeedback.h"
#include "CudaSettings.h"
#include "core/Error.h"
#include "pca/PcaJob.h"
#include "run/GpuRuntime.h"
#include "spp/SppJob.h"
#include "synth/Synth.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QFileInfo>

#include <cstdio>
#include <cstdlib>

using namespace hyperstream;

namespace {

const char* kUsage =
    "usage: hyperstream COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  pca INPUT OUTPUT     principal component analysis of a raster, file to file\n"
    "  synth OUTPUT         write the synthetic demo scene (512 x 512 x 224 int16 by default)\n"
    "  spp INPUT OUTPUT     spatial preprocessing (SPP) of a raster, file to file\n"
    "  devices              list the GPUs the CUDA backend can use\n"
    "\n"
    "'hyperstream COMMAND --help' describes a command's options.\n";

int runPcaCommand(const QStringList& arguments) {
  const PcaCommand command = parsePcaArguments(arguments, "hyperstream");
  ConsoleFeedback feedback(command.quiet);
  const PcaResult result = runPca(command.options, feedback);
  feedback.finish();
  if (!command.quiet) printPcaSummary(result, command.options);
  return 0;
}

int runSppCommand(const QStringList& arguments) {
  QCommandLineParser parser;
  parser.addOptions({
      {"window", "Odd window size in pixels, 3 to 15 (default 5).", "N"},
      {"border", "truncate (default: neighbours outside the image are left out) or mirror.",
       "MODE"},
      {"type", "float32 (default) or float64.", "TYPE"},
      {"bands", "Bands to use, 1-based, e.g. 1-50,60 (default: all).", "LIST"},
      {"alpha", "Also write alpha (the weighted mean spectral angle) as one band here.", "FILE"},
      {"rho", "Also write rho = (1 + sqrt(alpha))^2 as one band here.", "FILE"},
      {"format", "GDAL driver of the outputs (default: from the extension).", "NAME"},
      {"co", "GDAL creation option for the outputs (repeatable).", "NAME=VALUE"},
      {"ram", "Memory budget in MiB for image data (default 1024).", "MiB"},
      {"device", "auto (default: the GPU when one is usable), cpu, gpu or gpu:N.", "DEVICE"},
      {"strip-rows", "Rows per strip (default: from the memory budget).", "N"},
      {{"q", "quiet"}, "No progress bar or messages; errors only."},
  });
  parser.addPositionalArgument("INPUT", "Input raster (any GDAL format).");
  parser.addPositionalArgument("OUTPUT", "Output raster: the displaced spectra.");
  parseOrExit(parser, arguments, 2,
              "usage: hyperstream spp INPUT OUTPUT [options]\n\n"
              "Spatial preprocessing (Zortea & Plaza 2009): moves each valid pixel toward the\n"
              "mean spectrum by how much it differs in spectral angle from its neighbours, so\n"
              "that endmember extraction afterwards prefers spatially homogeneous areas.\n\n");
  SppOptions options;
  options.input = parser.positionalArguments()[0].toStdString();
  options.output = parser.positionalArguments()[1].toStdString();
  if (parser.isSet("window")) options.window = positiveInt(parser.value("window"), "window");
  const QString border = parser.value("border");
  if (border == "mirror")
    options.border = SppBorder::Mirror;
  else if (!border.isEmpty() && border != "truncate")
    usage("--border is truncate or mirror, not '" + border + "'");
  const QString type = parser.value("type").toLower();
  if (type == "float64")
    options.outputType = OutputType::Float64;
  else if (!type.isEmpty() && type != "float32")
    usage("--type is float32 or float64, not '" + type + "'");
  if (parser.isSet("bands")) options.bands = bandList(parser.value("bands"));
  options.alphaOutput = parser.value("alpha").toStdString();
  options.rhoOutput = parser.value("rho").toStdString();
  options.format = parser.value("format").toStdString();
  for (const QString& option : parser.values("co"))
    options.creationOptions.push_back(option.toStdString());
  if (parser.isSet("ram")) options.ramBytes = mebibytes(parser.value("ram"), "ram");
  if (parser.isSet("device"))
    options.device = DeviceChoice::parse(parser.value("device").toStdString());
  if (parser.isSet("strip-rows"))
    options.stripRows = positiveInteger(parser.value("strip-rows"), "strip-rows");
  const bool quiet = parser.isSet("quiet");
  ConsoleFeedback feedback(quiet);
  const SppResult result = runSpp(options, feedback);
  feedback.finish();
  if (!quiet) {
    std::printf("%lld valid pixels, mean alpha %.4g rad, %.2f s on %s\n",
                static_cast<long long>(result.validPixels), result.meanAlpha, result.seconds,
                result.backend.c_str());
    if (result.device.spp > 0)
      std::printf("GPU: upload %.1f ms, SPP kernels %.2f ms, download %.1f ms\n",
                  result.device.upload * 1e3, result.device.spp * 1e3,
                  result.device.download * 1e3);
    std::printf("output: %s\n", options.output.c_str());
    if (!options.alphaOutput.empty()) std::printf("alpha:  %s\n", options.alphaOutput.c_str());
    if (!options.rhoOutput.empty()) std::printf("rho:    %s\n", options.rhoOutput.c_str());
  }
  return 0;
}

int runDevicesCommand() {
  std::string whyNot;
  GpuRuntime* runtime = gpuRuntime(&whyNot);
  if (!runtime) {
    std::printf("no GPU backend: %s\n", whyNot.c_str());
    return 1;
  }
  std::printf("%s\n", runtime->versions().c_str());
  try {
    const std::vector<GpuDevice> devices = runtime->devices();
    if (devices.empty()) std::printf("no CUDA device\n");
    for (const GpuDevice& device : devices)
      std::printf("gpu:%d  %s, %.1f GiB (%.1f GiB free), compute capability %d.%d\n", device.index,
                  device.name.c_str(), device.totalBytes / 1073741824.0,
                  device.freeBytes / 1073741824.0, device.major, device.minor);
    return devices.empty() ? 1 : 0;
  } catch (const DeviceError& error) {
    std::printf("%s\n", error.what());
    return 1;
  }
}

int runSynthCommand(const QStringList& arguments) {
  QCommandLineParser parser;
  parser.addOptions({
      {"rows", "Rows (default 512).", "R"},
      {"cols", "Columns (default 512).", "C"},
      {"bands", "Bands, spread over 400-2500 nm (default 224).", "B"},
      {"type", "int16 (default), uint16 or float32.", "TYPE"},
      {"seed", "Random seed (default 1).", "S"},
      {"endmembers", "Number of endmember spectra (default 5).", "E"},
      {"dead-bands", "Number of constant (dead) bands (default: about one per 56 bands).", "N"},
      {"border", "Width of the nodata border in pixels (default: 1/64 of the smaller side).", "N"},
      {"truth",
       "Also write the abundance maps (<stem>_abundances.tif) and endmember spectra "
       "(<stem>_endmembers.csv)."},
      {"format", "GDAL driver of the output (default: from the extension).", "NAME"},
      {{"q", "quiet"}, "No progress bar or messages."},
  });
  parser.addPositionalArgument("OUTPUT", "The scene to write.");
  parseOrExit(
      parser, arguments, 1,
      "usage: hyperstream synth OUTPUT [options]\n\n"
      "Writes a synthetic hyperspectral scene: smooth endmember spectra (vegetation, soil,\n"
      "water, clay mineral, asphalt, ...) with absorption features, mixed by spatially\n"
      "coherent abundance maps that sum to one, with sensor noise, dead bands and a\n"
      "nodata border; scaled reflectance x 10000, UTM 10N, 20 m pixels.\n\n");
  SynthOptions options;
  options.output = parser.positionalArguments()[0].toStdString();
  if (parser.isSet("rows")) options.rows = positiveInteger(parser.value("rows"), "rows");
  if (parser.isSet("cols")) options.cols = positiveInteger(parser.value("cols"), "cols");
  if (parser.isSet("bands")) options.bands = positiveInt(parser.value("bands"), "bands");
  const QString type = parser.value("type").toLower();
  if (type == "uint16")
    options.type = GDT_UInt16;
  else if (type == "float32")
    options.type = GDT_Float32;
  else if (!type.isEmpty() && type != "int16")
    usage("--type is int16, uint16 or float32, not '" + type + "'");
  if (parser.isSet("seed")) options.seed = positiveInteger(parser.value("seed"), "seed");
  if (parser.isSet("endmembers"))
    options.endmembers = positiveInt(parser.value("endmembers"), "endmembers");
  if (parser.isSet("dead-bands"))
    options.deadBands = nonNegativeInt(parser.value("dead-bands"), "dead-bands");
  if (parser.isSet("border")) options.border = nonNegativeInt(parser.value("border"), "border");
  options.writeTruth = parser.isSet("truth");
  options.format = parser.value("format").toStdString();
  ConsoleFeedback feedback(parser.isSet("quiet"));
  const SynthResult result = synthesizeScene(options, feedback);
  feedback.finish();
  if (!parser.isSet("quiet")) {
    std::printf("scene: %s (%lld x %lld x %d)\n", options.output.c_str(),
                static_cast<long long>(options.rows), static_cast<long long>(options.cols),
                options.bands);
    if (options.writeTruth)
      std::printf("truth: %s, %s\n", result.abundancesPath.c_str(), result.endmembersPath.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  useTwoCudaConnections();
  QCoreApplication app(argc, argv);
  QCoreApplication::setApplicationName("hyperstream");
  QCoreApplication::setApplicationVersion(HYPERSTREAM_VERSION);
  QStringList arguments = QCoreApplication::arguments();
  const QString command = arguments.value(1);
  return reportingErrors("hyperstream", [&] {
    if (command.isEmpty() || command == "--help" || command == "-h" || command == "help") {
      std::fputs(kUsage, command.isEmpty() ? stderr : stdout);
      return command.isEmpty() ? 2 : 0;
    }
    if (command == "--version") {
      std::printf("hyperstream %s\n", HYPERSTREAM_VERSION);
      return 0;
    }
    arguments.removeAt(1);  // the parser sees "hyperstream ARGS..."
    if (command == "pca") return runPcaCommand(arguments);
    if (command == "synth") return runSynthCommand(arguments);
    if (command == "spp") return runSppCommand(arguments);
    if (command == "devices") return runDevicesCommand();
    usage("unknown command '" + command + "' (pca, spp, synth, devices; see --help)");
  });
}
