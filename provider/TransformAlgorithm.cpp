#include "TransformAlgorithm.h"

#include "ProcessingSupport.h"

#include <qgsprocessingoutputs.h>
#include <qgsprocessingparameters.h>

#include <algorithm>

namespace hyperstream {

TransformAlgorithm::TransformAlgorithm(Transform transform)
    : JobAlgorithm(transform == Transform::Mnf ? QStringLiteral("mnf") : QStringLiteral("pca")),
      transform_(transform) {}

void TransformAlgorithm::addJobParameters() {
  addDocumented(new QgsProcessingParameterNumber(
      QStringLiteral("COMPONENTS"), QObject::tr("Number of components (0: by variance)"),
      QgsProcessingParameterNumber::Integer, 0, false, 0));
  addDocumented(new QgsProcessingParameterNumber(
      QStringLiteral("VARIANCE"), QObject::tr("Cumulative variance to explain (%)"),
      QgsProcessingParameterNumber::Double, 99.0, false, 0.001, 100.0));
  if (transform_ == Transform::Mnf) {
    addDocumented(new QgsProcessingParameterNumber(
        QStringLiteral("MIN_SNR"), QObject::tr("Minimum SNR (when COMPONENTS is 0)"),
        QgsProcessingParameterNumber::Double, QVariant(), true, 0.0));
    addDocumented(new QgsProcessingParameterEnum(
        QStringLiteral("NOISE_DIRECTION"), QObject::tr("Noise from the neighbour"),
        {QObject::tr("Lower right"), QObject::tr("Lower left"), QObject::tr("Right"),
         QObject::tr("Lower")},
        false, 0));
  } else {
    addDocumented(new QgsProcessingParameterEnum(
        QStringLiteral("MATRIX"), QObject::tr("Matrix"),
        {QObject::tr("Covariance"), QObject::tr("Correlation")}, false, 0));
  }
  addDocumented(new QgsProcessingParameterEnum(
      QStringLiteral("OUTPUT_TYPE"), QObject::tr("Output data type"),
      {QStringLiteral("Float32"), QStringLiteral("Float64"), QObject::tr("Byte (0-255)")}, false,
      0));
}

void TransformAlgorithm::addJobOutputs() {
  addOptionalFileOutput(QStringLiteral("OUTPUT_STATS"), QObject::tr("Statistics (JSON)"),
                        QObject::tr("JSON files (*.json)"));
  addOptionalFileOutput(QStringLiteral("OUTPUT_TABLE"), QObject::tr("Component table (CSV)"),
                        QObject::tr("CSV files (*.csv)"));
  addOptionalFileOutput(QStringLiteral("OUTPUT_HTML_FILE"), QObject::tr("Report (HTML)"),
                        QObject::tr("HTML files (*.html)"), true);
  addOutput(new QgsProcessingOutputNumber(QStringLiteral("N_COMPONENTS"),
                                          QObject::tr("Number of components written")));
  addOutput(new QgsProcessingOutputNumber(QStringLiteral("VARIANCE_EXPLAINED"),
                                          QObject::tr("Variance explained by them (%)")));
}

void TransformAlgorithm::prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) {
  options_.components = parameterAsInt(parameters, QStringLiteral("COMPONENTS"), context);
  options_.variancePercent = parameterAsDouble(parameters, QStringLiteral("VARIANCE"), context);
  if (transform_ == Transform::Mnf) {
    const NoiseDirection directions[] = {NoiseDirection::LowerRight, NoiseDirection::LowerLeft,
                                         NoiseDirection::Right, NoiseDirection::Lower};
    options_.noise = directions[std::clamp(
        parameterAsEnum(parameters, QStringLiteral("NOISE_DIRECTION"), context), 0, 3)];
    const QVariant minSnr = parameters.value(QStringLiteral("MIN_SNR"));
    options_.minSnr.reset();
    if (minSnr.isValid() && !minSnr.isNull())
      options_.minSnr = parameterAsDouble(parameters, QStringLiteral("MIN_SNR"), context);
  } else {
    options_.matrix = parameterAsEnum(parameters, QStringLiteral("MATRIX"), context) == 1
                          ? MatrixType::Correlation
                          : MatrixType::Covariance;
  }
  const int type = parameterAsEnum(parameters, QStringLiteral("OUTPUT_TYPE"), context);
  options_.outputType =
      type == 1 ? OutputType::Float64 : (type == 2 ? OutputType::Byte : OutputType::Float32);
}

EngineAlgorithm::RunReport TransformAlgorithm::runJob(OutputFiles& files,
                                                      QgsProcessingFeedback* feedback) {
  options_.statsJson = files.file(QStringLiteral("OUTPUT_STATS"));
  options_.tableCsv = files.file(QStringLiteral("OUTPUT_TABLE"));
  options_.htmlReport = files.file(QStringLiteral("OUTPUT_HTML_FILE"));
  const PcaResult result =
      runEngineJob(feedback, [&](Feedback& engine) { return runPca(options_, engine); });
  const double explained = result.model.cumulativePercent(result.components - 1);
  return {result.model.validPixels,
          result.backend,
          {{QStringLiteral("N_COMPONENTS"), result.components},
           {QStringLiteral("VARIANCE_EXPLAINED"), explained}}};
}

}  // namespace hyperstream
