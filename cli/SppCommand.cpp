// hyperstream spp: spatial preprocessing, file to file.

#include "Commands.h"
#include "ConsoleFeedback.h"
#include "spp/SppJob.h"

#include <QCommandLineParser>

#include <cmath>
#include <cstdio>

namespace hyperstream {

namespace {

void readSppOptions(const QCommandLineParser& parser, SppOptions& options) {
  readSharedOptions(parser, options);
  if (parser.isSet("window")) options.window = positiveInt(parser.value("window"), "window");
  const QString border = parser.value("border");
  if (border == "mirror")
    options.border = SppBorder::Mirror;
  else if (!border.isEmpty() && border != "truncate")
    invalid("border", "--border is truncate or mirror, not '" + border + "'");
  options.noiseAdjusted = parser.isSet("noise-adjusted");
  options.outputType = outputTypeOption(parser, {OutputType::Float32, OutputType::Float64});
  options.alphaOutput = parser.value("alpha").toStdString();
  options.rhoOutput = parser.value("rho").toStdString();
}

void printSppSummary(const SppResult& result, const SppOptions& options) {
  std::printf("%lld valid pixels, mean alpha %.4g rad, %.2f s on %s\n",
              static_cast<long long>(result.validPixels), result.meanAlpha, result.seconds,
              result.backend.c_str());
  if (result.noisePairs > 0)
    std::printf("noise: %.4g per band (RMS standard deviation, %lld diagonal pairs)\n",
                std::sqrt(result.noiseVariance / static_cast<double>(result.bands.size())),
                static_cast<long long>(result.noisePairs));
  if (result.device.spp > 0)
    std::printf("GPU: upload %.1f ms, SPP kernels %.2f ms, download %.1f ms\n",
                result.device.upload * 1e3, result.device.spp * 1e3, result.device.download * 1e3);
  std::printf("output: %s\n", options.output.c_str());
  if (!options.alphaOutput.empty()) std::printf("alpha:  %s\n", options.alphaOutput.c_str());
  if (!options.rhoOutput.empty()) std::printf("rho:    %s\n", options.rhoOutput.c_str());
}

}  // namespace

int runSppCommand(const QStringList& arguments) {
  QCommandLineParser parser;
  parser.addOptions({
      {"window", "Odd window size in pixels, 3 to 15 (default 5).", "N"},
      {"border", "truncate (default: neighbours outside the image are left out) or mirror.",
       "MODE"},
      {"noise-adjusted",
       "Discount from each angle what the sensor noise explains (estimated from diagonal "
       "neighbours, as MNF does), so that dark homogeneous areas such as water are not pulled "
       "toward the mean; SPP as published without it."},
      {"type", "float32 (default) or float64.", "TYPE"},
      {"alpha", "Also write alpha (the weighted mean spectral angle) as one band here.", "FILE"},
      {"rho", "Also write rho = (1 + sqrt(alpha))^2 as one band here.", "FILE"},
  });
  addSharedOptions(parser, {"1-50,60", "the outputs",
                            "auto (default: the GPU when one is usable and the image large "
                            "enough for it, else the CPU), cpu, gpu or gpu:N."});
  parseOrExit(parser, arguments,
              {{"INPUT", "Input raster (any GDAL format)."},
               {"OUTPUT", "Output raster: the displaced spectra."}},
              "usage: hyperstream spp INPUT OUTPUT [options]\n\n"
              "Spatial preprocessing (Zortea & Plaza 2009): moves each valid pixel toward the\n"
              "mean spectrum by how much it differs in spectral angle from its neighbours, so\n"
              "that endmember extraction afterwards prefers spatially homogeneous areas.\n\n");
  SppOptions options;
  readSppOptions(parser, options);
  const bool quiet = parser.isSet("quiet");
  ConsoleFeedback feedback(quiet);
  const SppResult result = runSpp(options, feedback);
  feedback.finish();
  if (!quiet) printSppSummary(result, options);
  return 0;
}

}  // namespace hyperstream
