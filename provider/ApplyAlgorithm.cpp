#include "ApplyAlgorithm.h"

#include "ProcessingSupport.h"
#include "QgisCompat.h"

#include <qgsprocessingparameters.h>

#include <algorithm>

namespace hyperstream {

void ApplyAlgorithm::addJobParameters() {
  addDocumented(new QgsProcessingParameterFile(QStringLiteral("STATS"),
                                               QObject::tr("Saved transform (statistics JSON)"),
                                               compat::kFile, QStringLiteral("json")));
  addDocumented(new QgsProcessingParameterNumber(
      QStringLiteral("COMPONENTS"),
      inverts() ? QObject::tr("Number of components to rebuild from (0: every band)")
                : QObject::tr("Number of components (0: as the fitting run)"),
      compat::kInteger, 0, false, 0));
  addDocumented(new QgsProcessingParameterEnum(
      QStringLiteral("OUTPUT_TYPE"), QObject::tr("Output data type"),
      inverts() ? QStringList{QObject::tr("The fitted image's type"), QStringLiteral("Float32"),
                              QStringLiteral("Float64")}
                : QStringList{QStringLiteral("Float32"), QStringLiteral("Float64"),
                              QObject::tr("Byte (0-255)")},
      false, 0));
}

void ApplyAlgorithm::prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) {
  options_.savedTransform =
      parameterAsFile(parameters, QStringLiteral("STATS"), context).toStdString();
  options_.components = parameterAsInt(parameters, QStringLiteral("COMPONENTS"), context);
  const int type = parameterAsEnum(parameters, QStringLiteral("OUTPUT_TYPE"), context);
  options_.outputType =
      inverts() ? chosen(type, {OutputType::SameAsInput, OutputType::Float32, OutputType::Float64})
                : chosen(type, {OutputType::Float32, OutputType::Float64, OutputType::Byte});
}

EngineAlgorithm::RunReport ApplyAlgorithm::runJob(OutputFiles&, QgsProcessingFeedback* feedback) {
  const PcaResult result = runEngineJob(feedback, [&](Feedback& engine) {
    return inverts() ? runInverse(options_, engine) : runApply(options_, engine);
  });
  return {result.model.validPixels, result.backend, {}};
}

}  // namespace hyperstream
