// hyperstream synth: the synthetic demo scene.

#include "Commands.h"
#include "ConsoleFeedback.h"
#include "synth/Synth.h"

#include <QCommandLineParser>

#include <cstdio>

namespace hyperstream {

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
      {"noise", "Sensor noise standard deviation in DN, the same in every band (default 20).",
       "DN"},
      {"snr",
       "Instead of --noise: the noise that gives this SNR in dB over the scene (mean signal "
       "power over noise power), e.g. 35; dark endmembers then have a far lower SNR.",
       "DB"},
      {"shading",
       "Brightness varies smoothly over the scene by up to this percentage (default 10), as "
       "topography shades it; 0 for none.",
       "PCT"},
      {"pure-patches",
       "Also place a square of N x N pixels where each endmember lies pure (abundance 1).", "N"},
      {"truth",
       "Also write the abundance maps (<stem>_abundances.tif) and endmember spectra "
       "(<stem>_endmembers.csv)."},
      {"format", "GDAL driver of the output (default: from the extension).", "NAME"},
      {{"q", "quiet"}, "No progress bar or messages."},
  });
  parseOrExit(
      parser, arguments, {{"OUTPUT", "The scene to write."}},
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
    invalid("type", "--type is int16, uint16 or float32, not '" + type + "'");
  if (parser.isSet("seed")) options.seed = positiveInteger(parser.value("seed"), "seed");
  if (parser.isSet("endmembers"))
    options.endmembers = positiveInt(parser.value("endmembers"), "endmembers");
  if (parser.isSet("dead-bands"))
    options.deadBands = nonNegativeInt(parser.value("dead-bands"), "dead-bands");
  if (parser.isSet("border")) options.border = nonNegativeInt(parser.value("border"), "border");
  if (parser.isSet("noise")) options.noise = nonNegativeNumber(parser.value("noise"), "noise");
  if (parser.isSet("snr")) options.snrDb = nonNegativeNumber(parser.value("snr"), "snr");
  if (parser.isSet("shading"))
    options.shading = nonNegativeNumber(parser.value("shading"), "shading") / 100;
  if (parser.isSet("pure-patches"))
    options.purePatch = positiveInt(parser.value("pure-patches"), "pure-patches");
  options.writeTruth = parser.isSet("truth");
  options.format = parser.value("format").toStdString();
  ConsoleFeedback feedback(parser.isSet("quiet"));
  const SynthResult result = synthesizeScene(options, feedback);
  feedback.finish();
  if (!parser.isSet("quiet")) {
    std::printf("scene: %s (%lld x %lld x %d)\n", options.output.c_str(),
                static_cast<long long>(options.rows), static_cast<long long>(options.cols),
                options.bands);
    std::printf("noise: %.4g DN per band\n", result.noise);
    if (options.writeTruth)
      std::printf("truth: %s, %s\n", result.abundancesPath.c_str(), result.endmembersPath.c_str());
  }
  return 0;
}

}  // namespace hyperstream
