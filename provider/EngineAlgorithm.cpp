#include "EngineAlgorithm.h"

#include "ProcessingSupport.h"

#include <qgsapplication.h>
#include <qgsprocessingparameters.h>

#include <algorithm>

namespace hyperstream {

QIcon EngineAlgorithm::icon() const {
  return QgsApplication::getThemeIcon("/algorithms/mAlgorithmRandomRaster.svg");
}

void EngineAlgorithm::initAlgorithm(const QVariantMap&) {
  const Texts& texts = texts_;
  addParameter(withHelp(
      new QgsProcessingParameterRasterLayer(QStringLiteral("INPUT"), QObject::tr("Input raster")),
      QObject::tr("The hyperspectral image (any GDAL raster file).")));
  addParameter(
      withHelp(new QgsProcessingParameterBand(QStringLiteral("BANDS"), QObject::tr("Bands"),
                                              QVariant(), QStringLiteral("INPUT"), true, true),
               texts.bandsHelp));
  addJobParameters();
  QStringList devices = {QObject::tr("Auto"), QObject::tr("CPU"), QObject::tr("GPU")};
  if (runsOnSeveralGpus()) devices << QObject::tr("All GPUs");
  addParameter(
      withHelp(new QgsProcessingParameterEnum(QStringLiteral("DEVICE"),
                                              QObject::tr("Compute device"), devices, false, 0),
               texts.deviceHelp, true));
  addParameter(withHelp(
      new QgsProcessingParameterNumber(QStringLiteral("RAM_MB"), QObject::tr("RAM budget (MiB)"),
                                       QgsProcessingParameterNumber::Integer, 1024, false, 16),
      texts.ramHelp, true));
  auto* creation = new QgsProcessingParameterString(
      QStringLiteral("CREATION_OPTIONS"), QObject::tr("Creation options"), QVariant(), false, true);
  creation->setMetadata(
      {{QStringLiteral("widget_wrapper"),
        QVariantMap({{QStringLiteral("widget_type"), QStringLiteral("rasteroptions")}})}});
  addParameter(withHelp(creation,
                        QObject::tr("GDAL creation options of the raster outputs, NAME=VALUE "
                                    "separated by |, e.g. COMPRESS=DEFLATE|PREDICTOR=3."),
                        true));
  addParameter(withHelp(
      new QgsProcessingParameterRasterDestination(QStringLiteral("OUTPUT"), texts.outputName),
      texts.outputHelp));
  addJobOutputs();
}

bool EngineAlgorithm::prepareAlgorithm(const QVariantMap& parameters, QgsProcessingContext& context,
                                       QgsProcessingFeedback*) {
  JobOptions& options = jobOptions();
  options.input = inputRasterPath(*this, parameters, context);
  options.bands.clear();
  for (int band : parameterAsInts(parameters, QStringLiteral("BANDS"), context))
    options.bands.push_back(band);
  const DeviceChoice devices[] = {DeviceChoice(), DeviceChoice::cpu(), DeviceChoice::anyGpu(),
                                  DeviceChoice::everyGpu()};
  const int device = parameterAsEnum(parameters, QStringLiteral("DEVICE"), context);
  options.device = devices[std::clamp(device, 0, runsOnSeveralGpus() ? 3 : 2)];
  options.ramBytes =
      static_cast<int64_t>(parameterAsInt(parameters, QStringLiteral("RAM_MB"), context)) << 20;
  options.creationOptions = creationOptions(*this, parameters, context);
  prepareJob(parameters, context);
  return true;
}

bool EngineAlgorithm::checkParameterValues(const QVariantMap& parameters,
                                           QgsProcessingContext& context, QString* message) const {
  return QgsProcessingAlgorithm::checkParameterValues(parameters, context, message) &&
         checkCreationOptionsFor(*this, parameters, context, message) &&
         checkJobParameters(parameters, context, message);
}

QVariantMap EngineAlgorithm::processAlgorithm(const QVariantMap& parameters,
                                              QgsProcessingContext& context,
                                              QgsProcessingFeedback* feedback) {
  // Outputs are resolved here, on the context of the run: the background task of the dialog
  // loads the layers registered on it, not those of the context prepareAlgorithm was given.
  JobOptions& options = jobOptions();
  options.output =
      parameterAsOutputLayer(parameters, QStringLiteral("OUTPUT"), context).toStdString();
  QVariantMap outputs = runJob(parameters, context, feedback);
  outputs.insert(QStringLiteral("OUTPUT"), QString::fromStdString(options.output));
  return outputs;
}

}  // namespace hyperstream
