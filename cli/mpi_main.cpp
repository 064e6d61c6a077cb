// hyperstream-mpi: `hyperstream pca` shared by the ranks of an MPI run (Gs-PCA). Rank r reads and
// writes only rows [r*H/N, (r+1)*H/N); the moments are merged once, in rank order; every rank
// fits the same model and projects its rows into the one output file that rank 0 created.
//   mpirun -np 4 hyperstream-mpi pca INPUT OUTPUT [options of hyperstream pca]

#include "Commands.h"
#include "ConsoleFeedback.h"
#include "CudaSettings.h"
#include "Locale.h"
#include "MpiGroup.h"
#include "core/BlasThreads.h"
#include "core/Error.h"
#include "pca/PcaJob.h"
#include "run/GpuRuntime.h"

#include <QCoreApplication>

#include <mpi.h>

#include <cstdio>
#include <memory>

using namespace hyperstream;

namespace {

const char* kProgram = "hyperstream-mpi";

const char* kMpiHelp =
    "Run under MPI (mpirun -np N hyperstream-mpi pca ...): each rank reads, computes and\n"
    "writes only its share of the rows; rank 0 creates the output (an uncompressed GeoTIFF in\n"
    "strips of one row, or ENVI) and writes the reports. --device auto or gpu gives each rank\n"
    "the GPU of its local rank number (modulo the GPUs of its machine).\n\n";

// auto/gpu: this rank's GPU by its number on the machine; explicit choices stay as they are.
DeviceChoice deviceForRank(const DeviceChoice& device, int localRank) {
  if (!device.isAuto() && !device.unnumberedGpu()) return device;
  std::string whyNot;
  if (device.isAuto() && !gpuDriverPresent(&whyNot)) return device;
  GpuRuntime* runtime = gpuRuntime(&whyNot);
  try {
    const size_t count = runtime ? runtime->devices().size() : 0;
    if (count > 0) return DeviceChoice::gpu(localRank % static_cast<int>(count));
  } catch (const DeviceError&) {
    // No usable GPU: auto runs on the CPU; gpu reports it when the job selects its backend.
  }
  return device;
}

// The options of the command a word names: pca, mnf or denoise.
PcaCommand parseCommand(const QString& word, const QStringList& arguments) {
  if (word == "denoise") return parseDenoiseArguments(arguments, kProgram, kMpiHelp);
  if (word != "pca" && word != "mnf")
    usage(
        "the command is pca, mnf or denoise (mpirun -np N hyperstream-mpi pca INPUT OUTPUT "
        "[options])");
  return parsePcaArguments(arguments, kProgram, word == "mnf" ? Transform::Mnf : Transform::Pca,
                           kMpiHelp);
}

std::string describe(const Error& error) {
  return "error" + (error.parameter().empty() ? "" : " [" + error.parameter() + "]") + ": " +
         error.what();
}

int runRank(MpiGroup& group, const QStringList& arguments) {
  std::string message;
  int status = 1;
  try {
    QStringList pcaArguments = arguments;
    pcaArguments.removeAt(1);
    PcaCommand command = parseCommand(arguments.value(1), pcaArguments);
    if (command.options.device.severalGpus())
      invalid(
          "device",
          "under MPI each rank takes one GPU (--device gpu picks it by the rank's number on its "
          "machine); --gpus is for one process");
    command.options.device = deviceForRank(command.options.device, group.localRank());
    // Progress and messages from rank 0 only.
    std::unique_ptr<Feedback> feedback;
    if (group.rank() == 0)
      feedback = std::make_unique<ConsoleFeedback>(command.quiet);
    else
      feedback = std::make_unique<SilentFeedback>();
    // After ConsoleFeedback's own handler: mpirun's SIGTERM must remove the output at once, as
    // the other ranks cannot finish the job any more.
    removePendingFilesOnTermination();
    const PcaResult result = command.denoises ? runDenoise(command.options, *feedback, group)
                                              : runPca(command.options, *feedback, group);
    feedback.reset();  // clears the progress bar
    if (group.rank() == 0 && !command.quiet) {
      std::printf("%d ranks\n", group.size());
      printPcaSummary(result, command);
    }
    return 0;
  } catch (const GroupFailure& failure) {
    // Another rank failed; rank 0 reports it below.
    if (group.rank() == 0)
      std::fprintf(stderr, "%s: rank %d of %d failed: %s\n", kProgram, failure.rank, group.size(),
                   failure.what());
    return 1;
  } catch (const UsageError& error) {
    message = "error [USAGE]: " + error.message.toStdString();
    status = 2;
  } catch (const Canceled&) {
    message = "canceled; no output written";
    status = 130;
  } catch (const Error& error) {
    message = describe(error);
  } catch (const std::exception& error) {
    message = std::string("error: ") + error.what();
  }
  try {
    group.fail(message);
  } catch (const GroupFailure& failure) {
    if (group.rank() == 0) {
      if (failure.ranks == group.size())  // the same mistake everywhere (options, input)
        std::fprintf(stderr, "%s: %s\n", kProgram, failure.what());
      else
        std::fprintf(stderr, "%s: rank %d of %d failed: %s\n", kProgram, failure.rank, group.size(),
                     failure.what());
    }
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  useTwoCudaConnections();
  useOneBlasThreadPerProcess();
  preferUtf8Locale();
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(kProgram);
    QCoreApplication::setApplicationVersion(HYPERSTREAM_VERSION);
    MpiGroup group(MPI_COMM_WORLD);
    const QStringList arguments = QCoreApplication::arguments();
    if (arguments.contains("--help") || arguments.contains("-h") || arguments.size() < 2) {
      if (group.rank() == 0) {
        // Prints the help (or the usage error) once, then exits.
        MPI_Finalize();
        return reportingErrors(kProgram, [&] {
          QStringList pcaArguments = arguments;
          pcaArguments.removeAt(1);
          parseCommand(arguments.value(1), pcaArguments);
          return 0;
        });
      }
      MPI_Finalize();
      return 0;
    }
    status = runRank(group, arguments);
  }
  MPI_Finalize();
  return status;
}
