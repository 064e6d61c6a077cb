// hyperstream endmembers and hyperstream abundances: the unmixing chain after SPP.

#include "Commands.h"
#include "ConsoleFeedback.h"
#include "unmixing/AbundanceJob.h"
#include "unmixing/EndmemberJob.h"

#include <QCommandLineParser>

#include <cstdio>

namespace hyperstream {

namespace {

const char* kDeviceHelp =
    "auto (default: the GPU when one is usable and the image large enough for it, else the "
    "CPU), cpu, gpu or gpu:N.";
const char* kAbundanceDeviceHelp =
    "auto (default: the GPU when one is usable and the image large enough for it, else the "
    "CPU), cpu, gpu, gpu:N, or several GPUs (gpu:N,M,... or gpu:all), each unmixing a band of "
    "rows.";

void readEndmemberOptions(const QCommandLineParser& parser, EndmemberOptions& options) {
  readSharedOptions(parser, options);
  options.search.count = !parser.isSet("count") || parser.value("count") == "auto"
                             ? kCountFromScene
                             : positiveInt(parser.value("count"), "count");
  if (parser.isSet("method"))
    options.search.method = parseEndmemberMethod(parser.value("method").toLower().toStdString());
  if (parser.isSet("vca-projection"))
    options.search.projection =
        parseVcaProjection(parser.value("vca-projection").toLower().toStdString());
  options.locations = parser.value("locations-from").toStdString();
  options.pointsOutput = parser.value("points").toStdString();
  options.htmlReport = parser.value("html").toStdString();
  if (parser.isSet("seed")) options.search.seed = positiveInteger(parser.value("seed"), "seed");
  if (parser.isSet("average-window"))
    options.averageWindow = positiveInt(parser.value("average-window"), "average-window");
}

void printEndmemberSummary(const EndmemberResult& result, const EndmemberOptions& options) {
  for (const Endmember& e : result.table.endmembers)
    std::printf("%s: row %lld, col %lld%s\n", e.id.c_str(), static_cast<long long>(e.row),
                static_cast<long long>(e.col),
                e.pixelsAveraged > 1
                    ? (" (mean of " + std::to_string(e.pixelsAveraged) + " pixels)").c_str()
                    : "");
  std::printf("%d passes over the image%s, %.2f s on %s\n", result.search.passes,
              result.search.keptSearches > 0
                  ? (" and " + std::to_string(result.search.keptSearches) +
                     " searches of the values kept per pixel")
                        .c_str()
                  : "",
              result.seconds, result.backend.c_str());
  std::printf("output: %s\n", options.output.c_str());
  if (!options.pointsOutput.empty()) std::printf("points: %s\n", options.pointsOutput.c_str());
  if (!options.htmlReport.empty()) std::printf("report: %s\n", options.htmlReport.c_str());
}

void readAbundanceOptions(const QCommandLineParser& parser, AbundanceOptions& options) {
  readSharedOptions(parser, options);  // INPUT, and OUTPUT as the second argument: set below
  options.endmembers = parser.positionalArguments()[1].toStdString();
  options.output = parser.positionalArguments()[2].toStdString();
  if (parser.isSet("method"))
    options.method = parseAbundanceMethod(parser.value("method").toLower().toStdString());
  options.rmseOutput = parser.value("rmse").toStdString();
  options.htmlReport = parser.value("html").toStdString();
  options.outputType = outputTypeOption(parser, {OutputType::Float32, OutputType::Float64});
}

void printAbundanceSummary(const AbundanceResult& result, const AbundanceOptions& options) {
  std::printf("%zu endmembers, %lld valid pixels, %.2f s on %s\n",
              result.endmembers.endmembers.size(), static_cast<long long>(result.validPixels),
              result.seconds, result.backend.c_str());
  std::printf("output: %s\n", options.output.c_str());
  if (!options.rmseOutput.empty()) std::printf("rmse:   %s\n", options.rmseOutput.c_str());
  if (!options.htmlReport.empty()) std::printf("report: %s\n", options.htmlReport.c_str());
}

}  // namespace

int runEndmembersCommand(const QStringList& arguments) {
  QCommandLineParser parser;
  parser.addOptions({
      {"count",
       "Number of endmembers to find, 2 to 32, or 'auto' (the default): as many as the scene "
       "has materials, from its signal subspace (HySime) and the bend of the reconstruction "
       "error as the count grows (N-FINDR and FCLS over a sample of the pixels taken in the "
       "first pass, which VCA and N-FINDR make anyway; ATGP makes one more). The log shows "
       "both and the curve.",
       "P"},
      {"method",
       "vca (default; Nascimento & Bioucas-Dias 2005), nfindr (Winter 1999, on the first P-1 "
       "principal components, started from ATGP) or atgp (Ren & Chang 2003).",
       "METHOD"},
      {"vca-projection",
       "auto (default: VCA's own choice by its SNR estimate, where that SNR holds for the "
       "scene's dark pixels too), projective or subspace. The projective projection divides "
       "each pixel by its brightness, which amplifies the noise of dark pixels (water).",
       "MODE"},
      {"locations-from",
       "Search this raster instead (e.g. the output of 'hyperstream spp' on INPUT, same grid), "
       "and take the spectra from INPUT at the pixels found.",
       "RASTER"},
      {"points",
       "Also write the endmember pixels as points (GeoPackage, shapefile or GeoJSON, by the "
       "extension).",
       "FILE.gpkg"},
      {"html", "Write the HTML report (the spectra against wavelength, the pixels) here.",
       "FILE.html"},
      {"seed", "VCA's random seed (default 1): a seed gives the same endmembers on every run.",
       "S"},
      {"average-window",
       "Take each spectrum as the mean of the valid pixels in an N x N window around the pixel "
       "found (odd, default 1: the pixel alone).",
       "N"},
  });
  addSharedOptions(parser, {"1-100,120", "the outputs", kDeviceHelp});
  parseOrExit(parser, arguments,
              {{"INPUT", "Input raster (any GDAL format)."},
               {"OUTPUT", "The endmember table (CSV): id,row,col and the spectrum."}},
              "usage: hyperstream endmembers INPUT OUTPUT.csv [--count P|auto] [options]\n\n"
              "Finds P endmembers, the purest pixels of the image, by VCA, N-FINDR or ATGP,\n"
              "each a streamed pass over the image; writes their positions and spectra.\n\n");
  EndmemberOptions options;
  readEndmemberOptions(parser, options);
  const bool quiet = parser.isSet("quiet");
  ConsoleFeedback feedback(quiet);
  const EndmemberResult result = runEndmembers(options, feedback);
  feedback.finish();
  if (!quiet) printEndmemberSummary(result, options);
  return 0;
}

int runAbundancesCommand(const QStringList& arguments) {
  QCommandLineParser parser;
  parser.addOptions({
      {"method",
       "fcls (default: abundances >= 0 summing to one), nnls (>= 0) or ucls (unconstrained); "
       "each solved exactly (active set).",
       "METHOD"},
      {"rmse", "Also write each pixel's reconstruction error (RMSE over the bands) here.", "FILE"},
      {"html", "Write the HTML report (a map per endmember, the RMSE map, the spectra) here.",
       "FILE.html"},
      {"type", "float32 (default) or float64.", "TYPE"},
  });
  addSharedOptions(parser, {"1-100,120", "the outputs", kAbundanceDeviceHelp});
  parseOrExit(parser, arguments,
              {{"INPUT", "Input raster (any GDAL format)."},
               {"ENDMEMBERS", "Endmember table, as 'hyperstream endmembers' writes it."},
               {"OUTPUT", "Output raster: one abundance band per endmember."}},
              "usage: hyperstream abundances INPUT ENDMEMBERS.csv OUTPUT [options]\n\n"
              "Each valid pixel's abundances of the endmembers (least squares, constrained),\n"
              "file to file.\n\n");
  AbundanceOptions options;
  readAbundanceOptions(parser, options);
  const bool quiet = parser.isSet("quiet");
  ConsoleFeedback feedback(quiet);
  const AbundanceResult result = runAbundances(options, feedback);
  feedback.finish();
  if (!quiet) printAbundanceSummary(result, options);
  return 0;
}

}  // namespace hyperstream
