#include "SppAlgorithm.h"

#include "ProcessingSupport.h"
#include "QgisCompat.h"

#include <qgsprocessingoutputs.h>
#include <qgsprocessingparameters.h>

namespace hyperstream {

void SppAlgorithm::addJobParameters() {
  addDocumented(new QgsProcessingParameterNumber(
      QStringLiteral("WINDOW"), QObject::tr("Window size"), compat::kInteger, 5, false, 3, 15));
  addDocumented(new QgsProcessingParameterEnum(QStringLiteral("BORDER"), QObject::tr("Border"),
                                               {QObject::tr("Truncate"), QObject::tr("Mirror")},
                                               false, 0));
  addDocumented(new QgsProcessingParameterBoolean(
      QStringLiteral("NOISE_ADJUSTED"),
      QObject::tr("Noise-adjusted (keeps dark homogeneous areas such as water)"), true,
      true));  // optional: models saved before it existed stay valid
  addDocumented(new QgsProcessingParameterEnum(
      QStringLiteral("OUTPUT_TYPE"), QObject::tr("Output data type"),
      {QStringLiteral("Float32"), QStringLiteral("Float64")}, false, 0));
}

void SppAlgorithm::addJobOutputs() {
  addOptionalRasterOutput(QStringLiteral("OUTPUT_ALPHA"),
                          QObject::tr("Alpha (mean neighbour angle)"));
  addOptionalRasterOutput(QStringLiteral("OUTPUT_RHO"), QObject::tr("Rho (shrink factor)"));
  addOutput(new QgsProcessingOutputNumber(QStringLiteral("MEAN_ALPHA"),
                                          QObject::tr("Mean alpha over valid pixels (rad)")));
}

void SppAlgorithm::prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) {
  options_.window = parameterAsInt(parameters, QStringLiteral("WINDOW"), context);
  options_.border = parameterAsEnum(parameters, QStringLiteral("BORDER"), context) == 1
                        ? SppBorder::Mirror
                        : SppBorder::Truncate;
  options_.noiseAdjusted =
      parameterAsBoolean(parameters, QStringLiteral("NOISE_ADJUSTED"), context);
  options_.outputType = parameterAsEnum(parameters, QStringLiteral("OUTPUT_TYPE"), context) == 1
                            ? OutputType::Float64
                            : OutputType::Float32;
}

bool SppAlgorithm::checkJobParameters(const QVariantMap& parameters, QgsProcessingContext& context,
                                      QString* message) const {
  const int window = parameterAsInt(parameters, QStringLiteral("WINDOW"), context);
  if (window % 2 == 0) {
    if (message)
      *message = QObject::tr("WINDOW: the window must be odd (3, 5, ..., 15), not %1").arg(window);
    return false;
  }
  return true;
}

EngineAlgorithm::RunReport SppAlgorithm::runJob(OutputFiles& files,
                                                QgsProcessingFeedback* feedback) {
  options_.alphaOutput =
      files.layer(QStringLiteral("OUTPUT_ALPHA"), OutputStyle::PercentileStretch);
  options_.rhoOutput = files.layer(QStringLiteral("OUTPUT_RHO"));
  const SppResult result =
      runEngineJob(feedback, [&](Feedback& engine) { return runSpp(options_, engine); });
  return {result.validPixels, result.backend, {{QStringLiteral("MEAN_ALPHA"), result.meanAlpha}}};
}

}  // namespace hyperstream
