#include "Arguments.h"

#include "core/Error.h"

#include <QCommandLineParser>

#include <cstdio>
#include <cstdlib>

namespace hyperstream {

[[noreturn]] void usage(const QString& message) {
  throw UsageError{message};
}

int64_t positiveInteger(const QString& text, const QString& option) {
  bool ok = false;
  const qlonglong value = text.toLongLong(&ok);
  if (!ok || value < 1)
    usage(QString("--%1 takes a positive whole number, not '%2'").arg(option, text));
  return value;
}

int positiveInt(const QString& text, const QString& option, int largest) {
  const int64_t value = positiveInteger(text, option);
  if (value > largest)
    usage(QString("--%1 is at most %2, not %3").arg(option).arg(largest).arg(text));
  return static_cast<int>(value);
}

int nonNegativeInt(const QString& text, const QString& option) {
  bool ok = false;
  const int value = text.toInt(&ok);
  if (!ok || value < 0)
    usage(QString("--%1 takes a whole number, 0 or more, not '%2'").arg(option, text));
  return value;
}

int64_t mebibytes(const QString& text, const QString& option) {
  const int64_t value = positiveInteger(text, option);
  // Bytes must fit 64 bits (an exbibyte is far beyond any machine anyway).
  constexpr int64_t largest = std::numeric_limits<int64_t>::max() >> 20;
  if (value > largest)
    usage(
        QString("--%1 is a number of MiB, at most %2, not %3").arg(option).arg(largest).arg(text));
  return value << 20;
}

BandList bandList(const QString& text) {
  // "1,2,5-9": 1-based band numbers and ranges, kept as ranges (the input's band count is not
  // known here: the job checks them before expanding anything).
  BandList bands;
  for (const QString& part : text.split(',', Qt::SkipEmptyParts)) {
    const QStringList range = part.trimmed().split('-');
    bool okFirst = false, okLast = false;
    const int first = range.value(0).toInt(&okFirst);
    const int last = range.size() == 2 ? range[1].toInt(&okLast) : first;
    if (!okFirst || (range.size() == 2 && !okLast) || range.size() > 2 || last < first)
      usage(QString("--bands: '%1' is not a band number or a range like 5-9").arg(part));
    if (first < 1) usage(QString("--bands: band numbers start at 1, not %1").arg(first));
    bands.emplace_back(first, last);
  }
  if (bands.empty()) usage("--bands: no band given");
  return bands;
}

void parseOrExit(QCommandLineParser& parser, const QStringList& arguments, int positionals,
                 const char* help) {
  parser.addHelpOption();
  if (!parser.parse(arguments)) usage(parser.errorText());
  if (parser.isSet("help")) {
    std::fputs(help, stdout);
    std::fputs(parser.helpText().section('\n', 2).toLocal8Bit().constData(), stdout);
    std::exit(0);
  }
  if (parser.positionalArguments().size() != positionals)
    usage(QString("expected %1 file argument(s), got %2 (see --help)")
              .arg(positionals)
              .arg(parser.positionalArguments().size()));
}

PcaCommand parsePcaArguments(const QStringList& arguments, const char* program,
                             const char* extraHelp) {
  PcaCommand command;
  PcaOptions& options = command.options;
  QCommandLineParser parser;
  parser.addOptions({
      {"components",
       "Number of components to write (a number, or 'all'); default: as many as "
       "--variance needs.",
       "N"},
      {"variance",
       "Write the fewest components whose cumulative explained variance reaches PCT "
       "percent (default 99).",
       "PCT"},
      {"matrix", "covariance (default) or correlation (standardised bands).", "TYPE"},
      {"type",
       "Output type: float32 (default), float64, or byte (each component rescaled to "
       "0-255 from its min/max).",
       "TYPE"},
      {"bands", "Bands to use, 1-based, e.g. 1-100,120,130-198 (default: all).", "LIST"},
      {"stats", "Write the statistics report (JSON) here.", "FILE.json"},
      {"table", "Write one row per component (CSV) here.", "FILE.csv"},
      {"html", "Write the HTML report (scree plot, loadings, eigenvalues) here.", "FILE.html"},
      {"format", "GDAL driver of the output, e.g. GTiff or ENVI (default: from the extension).",
       "NAME"},
      {"co", "GDAL creation option for the output (repeatable), e.g. COMPRESS=DEFLATE.",
       "NAME=VALUE"},
      {"ram", "Memory budget in MiB for image data (default 1024).", "MiB"},
      {"device",
       "auto (default: the GPU when one is usable, else the CPU), cpu, gpu or gpu:N (GPU number "
       "N; an error when no GPU is usable).",
       "DEVICE"},
      {"gpus",
       "Several GPUs at once: a list such as 0,1, or all. Each GPU takes a band of rows (and "
       "keeps it in its memory when it fits); the output is written as one file.",
       "LIST"},
      {"gpu-memory", "GPU memory budget in MiB (default: the GPU's free memory less a margin).",
       "MiB"},
      {"strip-rows", "Rows per strip (default: from the memory budget).", "N"},
      {{"q", "quiet"}, "No progress bar or messages; errors only."},
  });
  parser.addPositionalArgument("INPUT", "Input raster (any GDAL format).");
  parser.addPositionalArgument("OUTPUT", "Output raster of principal components.");
  parseOrExit(parser, arguments, 2,
              (std::string("usage: ") + program + " pca INPUT OUTPUT [options]\n\n" +
               "Principal component analysis of every valid pixel of INPUT, streamed in strips;\n"
               "writes the components to OUTPUT (GeoTIFF unless the extension or --format says\n"
               "otherwise), georeferencing and nodata kept.\n\n" +
               extraHelp)
                  .c_str());

  options.input = parser.positionalArguments()[0].toStdString();
  options.output = parser.positionalArguments()[1].toStdString();
  if (parser.isSet("components") && parser.isSet("variance"))
    usage("give --components or --variance, not both");
  if (parser.isSet("components")) {
    const QString value = parser.value("components");
    options.components =
        value == "all" ? kAllComponents : positiveInt(value, "components", kMaxBandCount);
  }
  if (parser.isSet("variance")) {
    bool ok = false;
    options.variancePercent = parser.value("variance").toDouble(&ok);
    if (!ok) usage("--variance takes a percentage, e.g. 99");
  }
  const QString matrix = parser.value("matrix");
  if (matrix == "correlation")
    options.matrix = MatrixType::Correlation;
  else if (!matrix.isEmpty() && matrix != "covariance")
    usage("--matrix is covariance or correlation, not '" + matrix + "'");
  const QString type = parser.value("type").toLower();
  if (type == "float64")
    options.outputType = OutputType::Float64;
  else if (type == "byte")
    options.outputType = OutputType::Byte;
  else if (!type.isEmpty() && type != "float32")
    usage("--type is float32, float64 or byte, not '" + type + "'");
  if (parser.isSet("bands")) options.bands = bandList(parser.value("bands"));
  options.statsJson = parser.value("stats").toStdString();
  options.tableCsv = parser.value("table").toStdString();
  options.htmlReport = parser.value("html").toStdString();
  options.format = parser.value("format").toStdString();
  for (const QString& option : parser.values("co"))
    options.creationOptions.push_back(option.toStdString());
  if (parser.isSet("ram")) options.ramBytes = mebibytes(parser.value("ram"), "ram");
  if (parser.isSet("device"))
    options.device = DeviceChoice::parse(parser.value("device").toStdString());
  if (parser.isSet("gpus")) {
    if (parser.isSet("device")) usage("give --device or --gpus, not both");
    options.device = DeviceChoice::parse("gpu:" + parser.value("gpus").toStdString());
  }
  if (parser.isSet("gpu-memory"))
    options.gpuMemoryBytes = mebibytes(parser.value("gpu-memory"), "gpu-memory");
  if (parser.isSet("strip-rows"))
    options.stripRows = positiveInteger(parser.value("strip-rows"), "strip-rows");

  command.quiet = parser.isSet("quiet");
  return command;
}

void printPcaSummary(const PcaResult& result, const PcaOptions& options) {
  std::printf("%d component(s), %.2f %% of the variance, %lld valid pixels, %.2f s on %s\n",
              result.components, result.model.cumulativePercent(result.components - 1),
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
  std::printf("components: %s\n", options.output.c_str());
  if (!options.statsJson.empty()) std::printf("statistics: %s\n", options.statsJson.c_str());
  if (!options.tableCsv.empty()) std::printf("table:      %s\n", options.tableCsv.c_str());
  if (!options.htmlReport.empty()) std::printf("report:     %s\n", options.htmlReport.c_str());
}

int reportingErrors(const char* program, const std::function<int()>& command) {
  try {
    return command();
  } catch (const UsageError& error) {
    std::fprintf(stderr, "%s: %s\n", program, error.message.toLocal8Bit().constData());
    return 2;
  } catch (const Canceled&) {
    std::fprintf(stderr, "%s: canceled; no output written\n", program);
    return 130;
  } catch (const Error& error) {
    const std::string parameter = error.parameter().empty() ? "" : " [" + error.parameter() + "]";
    std::fprintf(stderr, "%s: error%s: %s\n", program, parameter.c_str(), error.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error [RAM_MB]: out of memory; lower the RAM budget (--ram)\n",
                 program);
    return 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: error: %s\n", program, error.what());
    return 1;
  }
}

}  // namespace hyperstream
