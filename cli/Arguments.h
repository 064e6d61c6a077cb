#pragma once
// What the command-line programs (hyperstream, hyperstream-mpi) share: option parsing helpers,
// the pca command's options and summary, and one-line error reports.

#include "PcaJob.h"

#include <QString>
#include <QStringList>

#include <cstdint>
#include <functional>
#include <vector>

class QCommandLineParser;

namespace hyperstream {

// A usage mistake: reported on one line, exit status 2.
struct UsageError {
  QString message;
};
[[noreturn]] void usage(const QString& message);

int64_t positiveInteger(const QString& text, const QString& option);
// "1,2,5-9": 1-based band numbers and ranges.
std::vector<int> bandList(const QString& text);
// Parses, prints the help and exits on --help, checks the number of file arguments.
void parseOrExit(QCommandLineParser& parser, const QStringList& arguments, int positionals,
                 const char* help);

struct PcaCommand {
  PcaOptions options;
  bool quiet = false;
};
// The pca command's options ("PROGRAM pca INPUT OUTPUT [options]"); `arguments` without the
// command word. extraHelp goes at the end of the --help text's description.
PcaCommand parsePcaArguments(const QStringList& arguments, const char* program,
                             const char* extraHelp = "");
void printPcaSummary(const PcaResult& result, const PcaOptions& options);

// Runs `command`; a thrown error becomes one line on stderr and the exit status (usage 2,
// cancel 130, other errors 1).
int reportingErrors(const char* program, const std::function<int()>& command);

}  // namespace hyperstream
