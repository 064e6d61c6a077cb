// hyperstream apply and inverse: a transform saved by a PCA or MNF run (its --stats JSON) applied
// to another image with the same bands, or inverted (the image rebuilt from components written
// earlier), file to file.

#include "Commands.h"

#include <QCommandLineParser>

#include <cstdio>

namespace hyperstream {

namespace {

// The shared options and the three files: the statistics JSON at `statsAt` among them, then the
// input and the output.
void readFiles(const QCommandLineParser& parser, int statsAt, PcaOptions& options) {
  readSharedOptions(parser, options);
  QStringList files = parser.positionalArguments();
  options.savedTransform = files.takeAt(statsAt).toStdString();
  options.input = files[0].toStdString();
  options.output = files[1].toStdString();
}

}  // namespace

int runApplyCommand(const QStringList& arguments) {
  QCommandLineParser parser;
  parser.addOptions({
      {"components",
       "Number of components to write (a number, or 'all'); default: as many as the fitting run "
       "wrote.",
       "N"},
      {"type",
       "Output type: float32 (default), float64, or byte (rescaled with the fitting run's "
       "ranges: it must have written Byte).",
       "TYPE"},
  });
  addSharedOptions(parser, {"1-100,120,130-198 (as many bands as the transform was fitted on; "
                            "default: the same band numbers)",
                            "the output", "auto (default), cpu, gpu or gpu:N, as for pca."});
  parseOrExit(parser, arguments,
              {{"STATS", "The statistics JSON of a pca or mnf run (--stats)."},
               {"INPUT", "Input raster with the bands the transform was fitted on."},
               {"OUTPUT", "Output raster of the components."}},
              "usage: hyperstream apply STATS.json INPUT OUTPUT [options]\n\n"
              "Applies the transform a pca or mnf run saved with --stats (means, scaling and\n"
              "vectors) to INPUT, streamed in strips: fit on one flight line, apply to the rest.\n"
              "On the image it was fitted on, the output is the fitting run's, bit for bit.\n\n");
  PcaOptions options;
  readFiles(parser, 0, options);
  if (parser.isSet("components")) {
    const QString value = parser.value("components");
    options.components =
        value == "all" ? kAllComponents : positiveInt(value, "components", kMaxBandCount);
  }
  options.outputType =
      outputTypeOption(parser, {OutputType::Float32, OutputType::Float64, OutputType::Byte});
  const bool quiet = parser.isSet("quiet");
  const PcaResult result =
      runWithConsole(quiet, [&](Feedback& feedback) { return runApply(options, feedback); });
  if (!quiet)
    std::printf("%d component(s) of %s applied, %.2f s on %s\ncomponents: %s\n", result.components,
                options.savedTransform.c_str(), result.seconds.total, result.backend.c_str(),
                options.output.c_str());
  return 0;
}

int runInverseCommand(const QStringList& arguments) {
  QCommandLineParser parser;
  parser.addOptions({
      {"components",
       "Rebuild from the first N component bands only (default: every band of COMPONENTS).", "N"},
      {"type",
       "Output type: input (default: the fitted image's data type, values rounded and clamped "
       "to it), float32 or float64.",
       "TYPE"},
  });
  addSharedOptions(parser, {"1-10 (the component bands, from the first on; default: all)",
                            "the output", "auto (default), cpu, gpu or gpu:N, as for pca."});
  parseOrExit(parser, arguments,
              {{"COMPONENTS", "Components written by pca, mnf or apply (band k: component k)."},
               {"STATS", "The statistics JSON of the pca or mnf run that fitted them (--stats)."},
               {"OUTPUT", "Output raster: the image rebuilt, one band per fitted band."}},
              "usage: hyperstream inverse COMPONENTS STATS.json OUTPUT [options]\n\n"
              "The inverse transform: each pixel of the image rebuilt from its components (mean\n"
              "+ the components times their inverse loadings; Byte components are first taken\n"
              "back through the fitting run's ranges). From all the components of a Float64\n"
              "run it returns the image; from the first few, the image without the rest.\n\n");
  PcaOptions options;
  readFiles(parser, 1, options);
  if (parser.isSet("components"))
    options.components = positiveInt(parser.value("components"), "components", kMaxBandCount);
  options.outputType =
      outputTypeOption(parser, {OutputType::SameAsInput, OutputType::Float32, OutputType::Float64});
  const bool quiet = parser.isSet("quiet");
  const PcaResult result =
      runWithConsole(quiet, [&](Feedback& feedback) { return runInverse(options, feedback); });
  if (!quiet)
    std::printf("rebuilt from %d component(s) of %s, %s, %.2f s on %s\nrebuilt:    %s\n",
                result.components, options.savedTransform.c_str(),
                outputTypeName(result.outputType).c_str(), result.seconds.total,
                result.backend.c_str(), options.output.c_str());
  return 0;
}

}  // namespace hyperstream
