// hyperstream: the command line of the Hyperstream engine.

#include "Commands.h"
#include "CudaSettings.h"
#include "Locale.h"
#include "core/BlasThreads.h"

#include <QCoreApplication>

#include <cstdio>
#include <functional>

using namespace hyperstream;

namespace {

struct Command {
  const char* name;
  const char* synopsis;
  std::function<int(const QStringList&)> run;
};

const Command kCommands[] = {
    {"pca", "pca INPUT OUTPUT     principal component analysis of a raster, file to file",
     runPcaCommand},
    {"mnf", "mnf INPUT OUTPUT     minimum noise fraction (noise-adjusted PCA), file to file",
     runMnfCommand},
    {"apply", "apply STATS INPUT OUTPUT  a saved pca or mnf transform applied to another image",
     runApplyCommand},
    {"denoise", "denoise INPUT OUTPUT the image rebuilt from its first PCA or MNF components",
     runDenoiseCommand},
    {"inverse",
     "inverse COMPONENTS STATS OUTPUT  the image rebuilt from components written earlier",
     runInverseCommand},
    {"spp", "spp INPUT OUTPUT     spatial preprocessing (SPP) of a raster, file to file",
     runSppCommand},
    {"endmembers",
     "endmembers INPUT OUTPUT.csv            the purest pixels by VCA, N-FINDR or ATGP",
     runEndmembersCommand},
    {"abundances",
     "abundances INPUT ENDMEMBERS.csv OUTPUT  each pixel's endmember abundances (FCLS, NNLS)",
     runAbundancesCommand},
    {"rx", "rx INPUT OUTPUT      the RX anomaly detector: each pixel's Mahalanobis distance",
     runRxCommand},
    {"detect",
     "detect INPUT TARGETS.csv OUTPUT --method mf|ace|cem  target detection (matched filter, "
     "ACE, CEM)",
     runDetectCommand},
    {"sam", "sam INPUT LIBRARY OUTPUT  the spectral angle mapper: classes from a spectral library",
     runSamCommand},
    {"synth",
     "synth OUTPUT         write the synthetic demo scene (512 x 512 x 224 int16 by "
     "default)",
     runSynthCommand},
    {"devices", "devices              list the GPUs the CUDA library can use", runDevicesCommand},
};

void printUsage(FILE* stream) {
  std::fputs("usage: hyperstream COMMAND [options]\n\ncommands:\n", stream);
  for (const Command& command : kCommands) std::fprintf(stream, "  %s\n", command.synopsis);
  std::fputs("\n'hyperstream COMMAND --help' describes a command's options.\n", stream);
}

}  // namespace

int main(int argc, char** argv) {
  useTwoCudaConnections();
  useOneBlasThreadPerProcess();
  preferUtf8Locale();
  QCoreApplication app(argc, argv);
  QCoreApplication::setApplicationName("hyperstream");
  QCoreApplication::setApplicationVersion(HYPERSTREAM_VERSION);
  QStringList arguments = QCoreApplication::arguments();
  const QString name = arguments.value(1);
  return reportingErrors("hyperstream", [&] {
    if (name.isEmpty() || name == "--help" || name == "-h" || name == "help") {
      printUsage(name.isEmpty() ? stderr : stdout);
      return name.isEmpty() ? 2 : 0;
    }
    if (name == "--version") {
      std::printf("hyperstream %s\n", HYPERSTREAM_VERSION);
      return 0;
    }
    arguments.removeAt(1);  // the parser sees "hyperstream ARGS..."
    for (const Command& command : kCommands)
      if (name == command.name) return command.run(arguments);
    usage("unknown command '" + name +
          "' (pca, mnf, apply, denoise, inverse, spp, endmembers, abundances, rx, detect, sam, "
          "synth, "
          "devices; "
          "see --help)");
  });
}
