#include "HyperstreamProvider.h"

#include "ApplyAlgorithm.h"
#include "DetectAlgorithms.h"
#include "HelpPages.h"
#include "SppAlgorithm.h"
#include "TransformAlgorithm.h"
#include "UnmixingAlgorithms.h"

#include <qgsapplication.h>
#include <qgsmessagelog.h>
#include <qgsprocessingregistry.h>

namespace hyperstream {

QString HyperstreamProvider::longName() const {
  return QStringLiteral(
             "Hyperstream %1 (hyperspectral PCA, MNF, denoising, SPP, unmixing and target "
             "detection, "
             "streamed, GPU or CPU)")
      .arg(HYPERSTREAM_VERSION);
}

QIcon HyperstreamProvider::icon() const {
  return QIcon(svgIconPath());
}

QString HyperstreamProvider::svgIconPath() const {
  return QStringLiteral(":/hyperstream/icons/provider.svg");
}

void HyperstreamProvider::loadAlgorithms() {
  addAlgorithm(new TransformAlgorithm(TransformAlgorithm::Writes::PcaComponents));
  addAlgorithm(new TransformAlgorithm(TransformAlgorithm::Writes::MnfComponents));
  addAlgorithm(new TransformAlgorithm(TransformAlgorithm::Writes::Denoised));
  addAlgorithm(new ApplyAlgorithm(ApplyAlgorithm::Direction::Forward));
  addAlgorithm(new ApplyAlgorithm(ApplyAlgorithm::Direction::Inverse));
  addAlgorithm(new SppAlgorithm());
  addAlgorithm(new EndmembersAlgorithm());
  addAlgorithm(new AbundancesAlgorithm());
  addAlgorithm(new DetectAlgorithm(DetectAlgorithm::Finds::Anomalies));
  addAlgorithm(new DetectAlgorithm(DetectAlgorithm::Finds::Targets));
  addAlgorithm(new SamAlgorithm());
}

}  // namespace hyperstream

namespace {
hyperstream::HyperstreamProvider* registered = nullptr;
}

extern "C" int hyperstream_register(const char* help_folder) {
  if (registered) return 1;
  QgsProcessingRegistry* registry = QgsApplication::processingRegistry();
  if (!registry) return 0;
  registered = new hyperstream::HyperstreamProvider(help_folder ? QString::fromUtf8(help_folder)
                                                                : QString());
  if (!registry->addProvider(registered)) {  // the registry deletes a refused provider
    registered = nullptr;
    return 0;
  }
  QString error;
  if (!registered->helpFolder().isEmpty() &&
      !hyperstream::writeHelpPages(*registered, registered->helpFolder(), &error))
    QgsMessageLog::logMessage(QObject::tr("Help pages not written: %1").arg(error),
                              QStringLiteral("Hyperstream"), Qgis::MessageLevel::Warning);
  return 1;
}

extern "C" void hyperstream_unregister() {
  if (!registered) return;
  if (QgsProcessingRegistry* registry = QgsApplication::processingRegistry())
    registry->removeProvider(registered);  // deletes it
  registered = nullptr;
}
