#include "HyperstreamProvider.h"

#include "core/Error.h"
#include "run/GpuRuntime.h"

#include "ApplyAlgorithm.h"
#include "SppAlgorithm.h"
#include "TransformAlgorithm.h"
#include "UnmixingAlgorithms.h"

#include <qgsapplication.h>
#include <qgsprocessingregistry.h>

namespace hyperstream {

QString HyperstreamProvider::longName() const {
  return QStringLiteral("Hyperstream %1 (hyperspectral PCA, MNF and SPP, streamed, GPU or CPU)")
      .arg(HYPERSTREAM_VERSION);
}

QIcon HyperstreamProvider::icon() const {
  return QgsApplication::getThemeIcon("/providerQgis.svg");
}

QString HyperstreamProvider::warningMessage() const {
  // Asked once: looking at the GPUs starts the CUDA driver.
  static const QString message = [] {
    // The driver alone first: loading the CUDA library and cuBLAS costs 0.4 s and 200 MiB.
    std::string whyNot;
    if (hyperstream::gpuDriverPresent(&whyNot)) {
      hyperstream::GpuRuntime* runtime = hyperstream::gpuRuntime(&whyNot);
      try {
        if (runtime && !runtime->devices().empty()) return QString();
        if (runtime) whyNot = "no CUDA device";
      } catch (const hyperstream::DeviceError& e) {
        whyNot = e.what();
      }
    }
    return QObject::tr(
               "No GPU can be used here (%1): Hyperstream runs on the CPU (OpenBLAS, all "
               "cores).")
        .arg(QString::fromStdString(whyNot));
  }();
  return message;
}

void HyperstreamProvider::loadAlgorithms() {
  addAlgorithm(new TransformAlgorithm(TransformAlgorithm::Writes::PcaComponents));
  addAlgorithm(new TransformAlgorithm(TransformAlgorithm::Writes::MnfComponents));
  addAlgorithm(new TransformAlgorithm(TransformAlgorithm::Writes::Denoised));
  addAlgorithm(new ApplyAlgorithm(PcaJobKind::Transform));
  addAlgorithm(new ApplyAlgorithm(PcaJobKind::Inverse));
  addAlgorithm(new SppAlgorithm());
  addAlgorithm(new EndmembersAlgorithm());
  addAlgorithm(new AbundancesAlgorithm());
}

}  // namespace hyperstream

namespace {
hyperstream::HyperstreamProvider* registered = nullptr;
}

extern "C" int hyperstream_register() {
  if (registered) return 1;
  QgsProcessingRegistry* registry = QgsApplication::processingRegistry();
  if (!registry) return 0;
  registered = new hyperstream::HyperstreamProvider();
  if (!registry->addProvider(registered)) {  // the registry deletes a refused provider
    registered = nullptr;
    return 0;
  }
  return 1;
}

extern "C" void hyperstream_unregister() {
  if (!registered) return;
  if (QgsProcessingRegistry* registry = QgsApplication::processingRegistry())
    registry->removeProvider(registered);  // deletes it
  registered = nullptr;
}
