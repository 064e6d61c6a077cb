#include "TransformAlgorithm.h"

#include "ProcessingSupport.h"
#include "QgisCompat.h"

#include <qgsprocessingoutputs.h>
#include <qgsprocessingparameters.h>

#include <algorithm>

namespace hyperstream {

namespace {

QString algorithmName(TransformAlgorithm::Writes writes) {
  switch (writes) {
    case TransformAlgorithm::Writes::PcaComponents:
      return QStringLiteral("pca");
    case TransformAlgorithm::Writes::MnfComponents:
      return QStringLiteral("mnf");
    case TransformAlgorithm::Writes::Denoised:
      return QStringLiteral("denoise");
  }
  return {};
}

// A number field's metadata: two decimals shown.
QVariantMap twoDecimals() {
  return {{QStringLiteral("widget_wrapper"), QVariantMap{{QStringLiteral("decimals"), 2}}}};
}

}  // namespace

TransformAlgorithm::TransformAlgorithm(Writes writes)
    : JobAlgorithm(algorithmName(writes)), writes_(writes) {}

void TransformAlgorithm::addJobParameters() {
  const bool denoise = writes_ == Writes::Denoised;
  if (denoise)
    addDocumented(new QgsProcessingParameterEnum(
        QStringLiteral("TRANSFORM"), QObject::tr("Transform"),
        {QObject::tr("PCA"), QObject::tr("MNF (minimum noise fraction)")}, false, 0));
  addDocumented(new QgsProcessingParameterNumber(
      QStringLiteral("COMPONENTS"),
      denoise ? QObject::tr("Number of components to keep (0: by the rule below)")
              : QObject::tr("Number of components (0: by the rule below)"),
      compat::kInteger, 0, false, 0));
  // Optional, so that models saved before it stay valid; PCA's default is the seeds' rule.
  addDocumented(new QgsProcessingParameterEnum(
      QStringLiteral("COUNT_RULE"), QObject::tr("When COMPONENTS is 0, keep"),
      {QObject::tr("The signal subspace (HySime)"), QObject::tr("A cumulative share (VARIANCE)")},
      false, writes_ == Writes::PcaComponents ? 1 : 0, true));
  const QString share = writes_ == Writes::PcaComponents ? QObject::tr("of the variance")
                        : writes_ == Writes::MnfComponents
                            ? QObject::tr("of the summed SNR")
                            : QObject::tr("of the variance (PCA) or summed SNR (MNF)");
  auto* variance = new QgsProcessingParameterNumber(
      QStringLiteral("VARIANCE"), QObject::tr("Cumulative share %1 (%)").arg(share),
      compat::kDouble, 99.0, false, 0.001, 100.0);
  variance->setMetadata(twoDecimals());  // "99.00", not "99.000000"
  addDocumented(variance);
  if (offersMnf()) {
    auto* minSnr = new QgsProcessingParameterNumber(
        QStringLiteral("MIN_SNR"), QObject::tr("Minimum SNR (when COMPONENTS is 0)"),
        compat::kDouble, QVariant(), true, 0.0);
    minSnr->setMetadata(twoDecimals());
    addDocumented(minSnr);
    addDocumented(new QgsProcessingParameterEnum(
        QStringLiteral("NOISE_DIRECTION"), QObject::tr("Noise from the neighbour"),
        {QObject::tr("Lower right"), QObject::tr("Lower left"), QObject::tr("Right"),
         QObject::tr("Lower")},
        false, 0));
  }
  if (offersPca())
    addDocumented(new QgsProcessingParameterEnum(
        QStringLiteral("MATRIX"), QObject::tr("Matrix"),
        {QObject::tr("Covariance"), QObject::tr("Correlation")}, false, 0));
  addDocumented(new QgsProcessingParameterEnum(
      QStringLiteral("OUTPUT_TYPE"), QObject::tr("Output data type"),
      denoise ? QStringList{QObject::tr("The input's type"), QStringLiteral("Float32"),
                            QStringLiteral("Float64")}
              : QStringList{QStringLiteral("Float32"), QStringLiteral("Float64"),
                            QObject::tr("Byte (0-255)")},
      false, 0));
}

void TransformAlgorithm::addJobOutputs() {
  // Offered ticked: Apply and Inverse need it, and a temporary file costs nothing.
  addOptionalFileOutput(QStringLiteral("OUTPUT_STATS"), QObject::tr("Statistics (JSON)"),
                        QObject::tr("JSON files (*.json)"), true);
  addOptionalFileOutput(QStringLiteral("OUTPUT_TABLE"), QObject::tr("Component table (CSV)"),
                        QObject::tr("CSV files (*.csv)"));
  addOptionalFileOutput(QStringLiteral("OUTPUT_HTML_FILE"), QObject::tr("Report (HTML)"),
                        QObject::tr("HTML files (*.html)"), true);
  addOutput(new QgsProcessingOutputNumber(QStringLiteral("N_COMPONENTS"),
                                          QObject::tr("Number of components written")));
  addOutput(new QgsProcessingOutputNumber(QStringLiteral("VARIANCE_EXPLAINED"),
                                          QObject::tr("Variance explained by them (%)")));
  addOutput(new QgsProcessingOutputNumber(
      QStringLiteral("SIGNAL_DIMENSION"),
      QObject::tr("Dimension of the signal subspace (HySime's estimate)")));
}

void TransformAlgorithm::readMnfOptions(const QVariantMap& parameters,
                                        QgsProcessingContext& context) {
  options_.noise = chosen(parameterAsEnum(parameters, QStringLiteral("NOISE_DIRECTION"), context),
                          {NoiseDirection::LowerRight, NoiseDirection::LowerLeft,
                           NoiseDirection::Right, NoiseDirection::Lower});
  const QVariant minSnr = parameters.value(QStringLiteral("MIN_SNR"));
  options_.minSnr.reset();
  if (minSnr.isValid() && !minSnr.isNull())
    options_.minSnr = parameterAsDouble(parameters, QStringLiteral("MIN_SNR"), context);
}

void TransformAlgorithm::prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) {
  const bool denoise = writes_ == Writes::Denoised;
  options_.components = parameterAsInt(parameters, QStringLiteral("COMPONENTS"), context);
  options_.variancePercent = parameterAsDouble(parameters, QStringLiteral("VARIANCE"), context);
  const bool bySubspace = parameterAsEnum(parameters, QStringLiteral("COUNT_RULE"), context) == 0;
  const bool mnf =
      writes_ == Writes::MnfComponents ||
      (denoise && parameterAsEnum(parameters, QStringLiteral("TRANSFORM"), context) == 1);
  options_.noise.reset();
  options_.minSnr.reset();
  options_.matrix = MatrixType::Covariance;
  if (mnf)
    readMnfOptions(parameters, context);
  else if (parameterAsEnum(parameters, QStringLiteral("MATRIX"), context) == 1)
    options_.matrix = MatrixType::Correlation;
  if (options_.components == 0 && !options_.minSnr && bySubspace)
    options_.components = kSignalSubspace;
  const int type = parameterAsEnum(parameters, QStringLiteral("OUTPUT_TYPE"), context);
  options_.outputType =
      denoise ? chosen(type, {OutputType::SameAsInput, OutputType::Float32, OutputType::Float64})
              : chosen(type, {OutputType::Float32, OutputType::Float64, OutputType::Byte});
}

EngineAlgorithm::RunReport TransformAlgorithm::runJob(OutputFiles& files,
                                                      QgsProcessingFeedback* feedback) {
  options_.statsJson = files.file(QStringLiteral("OUTPUT_STATS"));
  options_.tableCsv = files.file(QStringLiteral("OUTPUT_TABLE"));
  options_.htmlReport = files.file(QStringLiteral("OUTPUT_HTML_FILE"));
  const PcaResult result = runEngineJob(feedback, [&](Feedback& engine) {
    return writes_ == Writes::Denoised ? runDenoise(options_, engine) : runPca(options_, engine);
  });
  const double explained = result.model.cumulativePercent(result.components - 1);
  return {result.model.validPixels,
          result.backend,
          {{QStringLiteral("N_COMPONENTS"), result.components},
           {QStringLiteral("VARIANCE_EXPLAINED"), explained},
           {QStringLiteral("SIGNAL_DIMENSION"),
            result.subspace ? QVariant(result.subspace->dimension) : QVariant()}}};
}

}  // namespace hyperstream
