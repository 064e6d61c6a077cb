#include "PcaAlgorithm.h"

#include "ProcessingSupport.h"

#include <qgsapplication.h>
#include <qgsprocessingfeedback.h>
#include <qgsprocessingoutputs.h>
#include <qgsprocessingparameters.h>

namespace hyperstream {

namespace {

EngineAlgorithm::Texts pcaTexts() {
  EngineAlgorithm::Texts texts;
  texts.name = QStringLiteral("pca");
  texts.displayName = QObject::tr("Principal component analysis");
  texts.group = QObject::tr("Dimensionality reduction");
  texts.groupId = QStringLiteral("dimensionalityreduction");
  texts.tags = QObject::tr("pca,principal,component,hyperspectral,dimensionality,reduction,eigen");
  texts.help = QObject::tr(
      "Principal component analysis of a multi- or hyperspectral raster of any size, streamed "
      "from disk in strips and computed on a GPU or all CPU cores.\n\n"
      "Pixels with a nodata or non-finite value in any selected band are left out of the "
      "statistics and written as nodata. Constant bands are left out of the fit with a warning. "
      "The output keeps the georeferencing; its bands are described as 'PC1 (42.1 %, cum. "
      "42.1 %)'. A failed or canceled run leaves no output behind.");
  texts.bandsHelp = QObject::tr("Bands to analyse; all when none is selected.");
  texts.deviceHelp = QObject::tr(
      "Auto uses the first GPU when one can be used and the image is large enough for it to "
      "pay for starting CUDA (about 0.3 s, once per session), and says in the log what it chose "
      "and why; the CPU runs OpenBLAS on all cores. GPU fails when no GPU can be used; a GPU "
      "error during an Auto run makes it start again on the CPU. All GPUs gives each GPU of the "
      "machine a band of rows (kept in its memory when it fits) and writes one output.");
  texts.ramHelp = QObject::tr(
      "Memory for image data. The cube stays in memory between the two passes when it fits; "
      "otherwise it is read twice (a compressed input is first decompressed once into a "
      "temporary copy beside the output).");
  texts.outputName = QObject::tr("Principal components");
  texts.outputHelp = QObject::tr("One band per component.");
  return texts;
}

}  // namespace

PcaAlgorithm::PcaAlgorithm() : EngineAlgorithm(pcaTexts()) {}

void PcaAlgorithm::addJobParameters() {
  addParameter(withHelp(
      new QgsProcessingParameterNumber(QStringLiteral("COMPONENTS"),
                                       QObject::tr("Number of components (0: by variance)"),
                                       QgsProcessingParameterNumber::Integer, 0, false, 0),
      QObject::tr("How many components to write; 0 writes the fewest that explain VARIANCE.")));
  addParameter(
      withHelp(new QgsProcessingParameterNumber(
                   QStringLiteral("VARIANCE"), QObject::tr("Cumulative variance to explain (%)"),
                   QgsProcessingParameterNumber::Double, 99.0, false, 0.001, 100.0),
               QObject::tr("Used when COMPONENTS is 0.")));
  addParameter(withHelp(
      new QgsProcessingParameterEnum(QStringLiteral("MATRIX"), QObject::tr("Matrix"),
                                     {QObject::tr("Covariance"), QObject::tr("Correlation")}, false,
                                     0),
      QObject::tr("Covariance keeps the bands' units; correlation standardises each band.")));
  addParameter(withHelp(
      new QgsProcessingParameterEnum(
          QStringLiteral("OUTPUT_TYPE"), QObject::tr("Output data type"),
          {QStringLiteral("Float32"), QStringLiteral("Float64"), QObject::tr("Byte (0-255)")},
          false, 0),
      QObject::tr("Byte rescales each component to 0-255 from its min/max (1-255 with 0 as "
                  "nodata when some pixels are invalid), like GRASS i.pca.")));
}

void PcaAlgorithm::addJobOutputs() {
  addParameter(withHelp(
      new QgsProcessingParameterFileDestination(
          QStringLiteral("OUTPUT_STATS"), QObject::tr("Statistics (JSON)"),
          QObject::tr("JSON files (*.json)"), QVariant(), true, false),
      QObject::tr("Means, eigenvalues, eigenvectors and everything needed to apply the same "
                  "transform to another image.")));
  addParameter(withHelp(
      new QgsProcessingParameterFileDestination(
          QStringLiteral("OUTPUT_TABLE"), QObject::tr("Component table (CSV)"),
          QObject::tr("CSV files (*.csv)"), QVariant(), true, false),
      QObject::tr("One row per component: eigenvalue, explained and cumulative variance.")));
  addParameter(withHelp(
      new QgsProcessingParameterFileDestination(
          QStringLiteral("OUTPUT_HTML_FILE"), QObject::tr("Report (HTML)"),
          QObject::tr("HTML files (*.html)"), QVariant(), true, true),
      QObject::tr("Scree plot with the cumulative variance, loadings of the first components "
                  "against wavelength, eigenvalue table, pixel counts, device and timings.")));
  addOutput(new QgsProcessingOutputNumber(QStringLiteral("N_COMPONENTS"),
                                          QObject::tr("Number of components written")));
  addOutput(new QgsProcessingOutputNumber(QStringLiteral("VARIANCE_EXPLAINED"),
                                          QObject::tr("Variance explained by them (%)")));
  addOutput(
      new QgsProcessingOutputNumber(QStringLiteral("VALID_PIXELS"), QObject::tr("Valid pixels")));
  addOutput(new QgsProcessingOutputString(QStringLiteral("DEVICE_USED"),
                                          QObject::tr("Compute device used")));
}

void PcaAlgorithm::prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) {
  options_.components = parameterAsInt(parameters, QStringLiteral("COMPONENTS"), context);
  options_.variancePercent = parameterAsDouble(parameters, QStringLiteral("VARIANCE"), context);
  options_.matrix = parameterAsEnum(parameters, QStringLiteral("MATRIX"), context) == 1
                        ? MatrixType::Correlation
                        : MatrixType::Covariance;
  const int type = parameterAsEnum(parameters, QStringLiteral("OUTPUT_TYPE"), context);
  options_.outputType =
      type == 1 ? OutputType::Float64 : (type == 2 ? OutputType::Byte : OutputType::Float32);
}

QVariantMap PcaAlgorithm::runJob(const QVariantMap& parameters, QgsProcessingContext& context,
                                 QgsProcessingFeedback* feedback) {
  options_.statsJson =
      parameterAsFileOutput(parameters, QStringLiteral("OUTPUT_STATS"), context).toStdString();
  options_.tableCsv =
      parameterAsFileOutput(parameters, QStringLiteral("OUTPUT_TABLE"), context).toStdString();
  options_.htmlReport =
      parameterAsFileOutput(parameters, QStringLiteral("OUTPUT_HTML_FILE"), context).toStdString();
  ProcessingFeedback engineFeedback(feedback);
  PcaResult result;
  runEngineJob([&] { result = runPca(options_, engineFeedback); });
  if (feedback)
    feedback->pushInfo(QObject::tr("Computed on %1").arg(QString::fromStdString(result.backend)));
  QVariantMap outputs;
  if (!options_.statsJson.empty())
    outputs.insert(QStringLiteral("OUTPUT_STATS"), QString::fromStdString(options_.statsJson));
  if (!options_.tableCsv.empty())
    outputs.insert(QStringLiteral("OUTPUT_TABLE"), QString::fromStdString(options_.tableCsv));
  if (!options_.htmlReport.empty())
    outputs.insert(QStringLiteral("OUTPUT_HTML_FILE"), QString::fromStdString(options_.htmlReport));
  outputs.insert(QStringLiteral("N_COMPONENTS"), result.components);
  outputs.insert(QStringLiteral("VARIANCE_EXPLAINED"),
                 result.model.cumulativePercent(result.components - 1));
  outputs.insert(QStringLiteral("VALID_PIXELS"), static_cast<double>(result.model.validPixels));
  outputs.insert(QStringLiteral("DEVICE_USED"), QString::fromStdString(result.backend));
  return outputs;
}

}  // namespace hyperstream
