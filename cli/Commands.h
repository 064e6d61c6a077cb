#pragma once
// The commands of the hyperstream program (PcaCommand.cpp: pca, mnf and denoise; ApplyCommand.cpp:
// apply and inverse; SppCommand.cpp, UnmixingCommands.cpp: endmembers and abundances;
// DetectCommands.cpp: rx, detect and sam; SynthCommand.cpp, DevicesCommand.cpp). Each takes its
// arguments without the command word
// ("hyperstream ARGS...") and returns the exit status; errors are thrown (see reportingErrors).

#include "Arguments.h"
#include "ConsoleFeedback.h"
#include "pca/PcaJob.h"

#include <QStringList>

namespace hyperstream {

struct PcaCommand {
  PcaOptions options;
  bool denoises = false;  // the denoise command (else pca or mnf)
  bool quiet = false;
};
// The pca or mnf command's options ("PROGRAM pca INPUT OUTPUT [options]"); `arguments` without
// the command word. extraHelp goes at the end of the --help text's description.
PcaCommand parsePcaArguments(const QStringList& arguments, const char* program, Transform transform,
                             const char* extraHelp = "");
// The denoise command's options ("PROGRAM denoise INPUT OUTPUT [options]"), likewise.
PcaCommand parseDenoiseArguments(const QStringList& arguments, const char* program,
                                 const char* extraHelp = "");
void printPcaSummary(const PcaResult& result, const PcaCommand& command);
// --gpus and --gpu-memory, then the shared options (with the PCA job's --device help), and
// their values.
void addGpuAndSharedOptions(QCommandLineParser& parser);
void readGpuOptions(const QCommandLineParser& parser, CovarianceOptions& options);
// Runs job(feedback) with the console's progress and messages (none when `quiet`).
template <class Job>
auto runWithConsole(bool quiet, const Job& job) {
  ConsoleFeedback feedback(quiet);
  auto result = job(feedback);
  feedback.finish();
  return result;
}

int runPcaCommand(const QStringList& arguments);
int runMnfCommand(const QStringList& arguments);
int runApplyCommand(const QStringList& arguments);
int runDenoiseCommand(const QStringList& arguments);
int runInverseCommand(const QStringList& arguments);
int runSppCommand(const QStringList& arguments);
int runEndmembersCommand(const QStringList& arguments);
int runAbundancesCommand(const QStringList& arguments);
int runRxCommand(const QStringList& arguments);
int runDetectCommand(const QStringList& arguments);
int runSamCommand(const QStringList& arguments);
int runSynthCommand(const QStringList& arguments);
int runDevicesCommand(const QStringList& arguments);

}  // namespace hyperstream
