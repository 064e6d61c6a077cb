#pragma once
// What the command-line programs (hyperstream, hyperstream-mpi) share: option parsing helpers,
// the options every job command takes, and one-line error reports.

#include "core/JobOptions.h"

#include <QString>
#include <QStringList>

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

class QCommandLineParser;

namespace hyperstream {

// Every error is one line, "hyperstream: error [NAME]: what is wrong". A command line that cannot
// be parsed (an unknown option or command, files missing) names USAGE and exits with status 2.
struct UsageError {
  QString message;
};
[[noreturn]] void usage(const QString& message);
// An option's value that is not one it takes: an Error naming the parameter the option sets, as
// QGIS names it (--type: OUTPUT_TYPE, --ram: RAM_MB), exit status 1 as every other error.
[[noreturn]] void invalid(const QString& option, const QString& message);
std::string parameterOf(const QString& option);

// Option values; a value that is not one is an error naming the option's parameter.
int64_t positiveInteger(const QString& text, const QString& option);
int positiveInt(const QString& text, const QString& option,
                int largest = std::numeric_limits<int>::max());
int nonNegativeInt(const QString& text, const QString& option);
double nonNegativeNumber(const QString& text, const QString& option);
int64_t mebibytes(const QString& text, const QString& option);  // in bytes
// "1,2,5-9": 1-based band numbers and ranges.
BandList bandList(const QString& text);
// More than any raster GDAL opens has (GDAL_MAX_BAND_COUNT is 65536 by default).
constexpr int kMaxBandCount = 1 << 20;
// A file argument: its name in the usage line and what it is.
struct FileArgument {
  const char* name;
  const char* help;
};
// Declares the file arguments, parses, prints the help and exits on --help, checks the number of
// file arguments.
void parseOrExit(QCommandLineParser& parser, const QStringList& arguments,
                 const std::vector<FileArgument>& files, const char* help);

// What the shared options say for one command.
struct SharedOptionHelp {
  QString bandsExample;  // e.g. "1-100,120,130-198"
  QString outputs;       // "the output" or "the outputs"
  QString device;        // --device's help
};
// Declares the options every job command shares: --bands, --format, --co, --ram, --device,
// --strip-rows and --quiet.
void addSharedOptions(QCommandLineParser& parser, const SharedOptionHelp& help);
// --type: one of `allowed` (the first is the default), by name in any case.
OutputType outputTypeOption(const QCommandLineParser& parser,
                            const std::vector<OutputType>& allowed);
// INPUT and OUTPUT (the first two file arguments) and the shared options into `options`.
void readSharedOptions(const QCommandLineParser& parser, JobOptions& options);

// Runs `command`; a thrown error becomes one line on stderr and the exit status (usage 2,
// cancel 130, other errors 1).
int reportingErrors(const char* program, const std::function<int()>& command);

}  // namespace hyperstream
