#include "Arguments.h"
#include "DeviceOption.h"

#include "core/Error.h"

#include <QCommandLineParser>
#include <QMap>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace hyperstream {

[[noreturn]] void usage(const QString& message) {
  throw UsageError{message};
}

std::string parameterOf(const QString& option) {
  static const QMap<QString, QString> differing = {
      {"type", "OUTPUT_TYPE"},
      {"ram", "RAM_MB"},
      {"snr", "MIN_SNR"},
      {"noise", "NOISE_DIRECTION"},
      {"co", "CREATION_OPTIONS"},
      {"gpus", "DEVICE"},
      {"gpu-memory", "GPU_MEMORY_MB"},
      {"locations-from", "LOCATIONS"},
      {"html", "OUTPUT_HTML_FILE"},
      {"stats", "OUTPUT_STATS"},
      {"table", "OUTPUT_TABLE"},
      {"alpha", "OUTPUT_ALPHA"},
      {"rho", "OUTPUT_RHO"},
      {"rmse", "OUTPUT_RMSE"},
      {"points", "OUTPUT_POINTS"},
  };
  return differing.value(option, QString(option).toUpper().replace('-', '_')).toStdString();
}

[[noreturn]] void invalid(const QString& option, const QString& message) {
  throw Error(parameterOf(option), message.toStdString());
}

namespace {

// A whole number of at least `smallest` (0 or 1) and at most `largest`.
int64_t wholeNumber(const QString& text, const QString& option, int64_t smallest,
                    int64_t largest = std::numeric_limits<int64_t>::max()) {
  bool ok = false;
  const qlonglong value = text.toLongLong(&ok);
  if (!ok || value < smallest)
    invalid(option, QString(smallest > 0 ? "--%1 takes a positive whole number, not '%2'"
                                         : "--%1 takes a whole number, 0 or more, not '%2'")
                        .arg(option, text));
  if (value > largest)
    invalid(option, QString("--%1 is at most %2, not %3").arg(option).arg(largest).arg(text));
  return value;
}

}  // namespace

int64_t positiveInteger(const QString& text, const QString& option) {
  return wholeNumber(text, option, 1);
}

int positiveInt(const QString& text, const QString& option, int largest) {
  return static_cast<int>(wholeNumber(text, option, 1, largest));
}

int nonNegativeInt(const QString& text, const QString& option) {
  return static_cast<int>(wholeNumber(text, option, 0, std::numeric_limits<int>::max()));
}

double nonNegativeNumber(const QString& text, const QString& option) {
  bool ok = false;
  const double value = text.toDouble(&ok);
  if (!ok || !(value >= 0) || !std::isfinite(value))
    invalid(option, QString("--%1 takes a number, 0 or more, not '%2'").arg(option, text));
  return value;
}

int64_t mebibytes(const QString& text, const QString& option) {
  const int64_t value = positiveInteger(text, option);
  // Bytes must fit 64 bits (an exbibyte is far beyond any machine anyway).
  constexpr int64_t largest = std::numeric_limits<int64_t>::max() >> 20;
  if (value > largest)
    invalid(
        option,
        QString("--%1 is a number of MiB, at most %2, not %3").arg(option).arg(largest).arg(text));
  return value << 20;
}

BandList bandList(const QString& text) {
  try {
    return parseBandList(text.toStdString(), "BANDS");
  } catch (const Error& error) {
    invalid("bands", QString("--bands: ") + error.what());
  }
}

void parseOrExit(QCommandLineParser& parser, const QStringList& arguments,
                 const std::vector<FileArgument>& files, const char* help) {
  for (const FileArgument& file : files) parser.addPositionalArgument(file.name, file.help);
  const int positionals = static_cast<int>(files.size());
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

void addSharedOptions(QCommandLineParser& parser, const SharedOptionHelp& help) {
  parser.addOptions({
      {"bands", "Bands to use, 1-based, e.g. " + help.bandsExample + " (default: all).", "LIST"},
      {"exclude-nm",
       "Leave out the bands whose wavelength lies in these ranges (nanometres), e.g. the "
       "water-vapour windows 1340-1450,1790-1960.",
       "RANGES"},
      {"use-bbl", "Leave out the bands the input's bad-band list (ENVI bbl) marks bad."},
      {"nodata",
       "The input's nodata value, for every band, in place of what the file declares (e.g. the "
       "fill of a product whose file declares none).",
       "VALUE"},
      {"orthorectify",
       "Put the raster outputs on the input's map grid through its GLT (EMIT), each cell the "
       "value of its GLT pixel as EMIT's own tools do (default: the image's own geometry)."},
      {"format",
       "GDAL driver of " + help.outputs + ", e.g. GTiff or ENVI (default: from the extension).",
       "NAME"},
      {"co", "GDAL creation option for " + help.outputs + " (repeatable), e.g. COMPRESS=DEFLATE.",
       "NAME=VALUE"},
      {"ram", "Memory budget in MiB for image data (default 1024).", "MiB"},
      {"device", help.device, "DEVICE"},
      {"strip-rows", "Rows per strip (default: from the memory budget).", "N"},
      {{"q", "quiet"}, "No progress bar or messages; errors only."},
  });
}

OutputType outputTypeOption(const QCommandLineParser& parser,
                            const std::vector<OutputType>& allowed) {
  const QString type = parser.value("type");
  if (type.isEmpty()) return allowed.front();
  QStringList names;
  for (const OutputType candidate : allowed) {
    const QString name = QString::fromStdString(outputTypeName(candidate)).toLower();
    if (type.toLower() == name) return candidate;
    names << name;
  }
  const QString last = names.takeLast();
  invalid("type", "--type is " + names.join(", ") + " or " + last + ", not '" + type + "'");
}

void readSharedOptions(const QCommandLineParser& parser, JobOptions& options) {
  options.input = parser.positionalArguments()[0].toStdString();
  options.output = parser.positionalArguments()[1].toStdString();
  if (parser.isSet("bands")) options.bands = bandList(parser.value("bands"));
  if (parser.isSet("exclude-nm")) {
    try {
      options.exclude.nanometres = parseNanometreRanges(parser.value("exclude-nm").toStdString());
    } catch (const Error& error) {
      invalid("exclude-nm", QString("--exclude-nm: ") + error.what());
    }
  }
  options.exclude.badBandList = parser.isSet("use-bbl");
  if (parser.isSet("nodata")) {
    bool ok = false;
    options.nodata = parser.value("nodata").toDouble(&ok);
    if (!ok) invalid("nodata", "--nodata is a number, not '" + parser.value("nodata") + "'");
  }
  options.orthorectify = parser.isSet("orthorectify");
  options.format = parser.value("format").toStdString();
  for (const QString& option : parser.values("co"))
    options.creationOptions.push_back(option.toStdString());
  if (parser.isSet("ram")) options.ramBytes = mebibytes(parser.value("ram"), "ram");
  if (parser.isSet("device")) options.device = parseDevice(parser.value("device").toStdString());
  if (parser.isSet("strip-rows"))
    options.stripRows = positiveInteger(parser.value("strip-rows"), "strip-rows");
}

int reportingErrors(const char* program, const std::function<int()>& command) {
  try {
    return command();
  } catch (const UsageError& error) {
    std::fprintf(stderr, "%s: error [USAGE]: %s\n", program,
                 error.message.toLocal8Bit().constData());
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
