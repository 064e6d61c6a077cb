#include "ProcessingSupport.h"

#include "Error.h"

#include <qgsexception.h>
#include <qgsrasterdataprovider.h>
#include <qgsrasterlayer.h>

#include <QFileInfo>

namespace hyperstream {

void ProcessingFeedback::setProgress(double percent) {
  if (feedback_) feedback_->setProgress(percent);
}

void ProcessingFeedback::log(Level level, const QString& message) {
  if (!feedback_) return;
  if (level == Level::Warning)
    feedback_->pushWarning(message);
  else
    feedback_->pushInfo(message);
}

bool ProcessingFeedback::isCanceled() const {
  return feedback_ && feedback_->isCanceled();
}

std::string inputRasterPath(const QgsProcessingAlgorithm& algorithm, const QVariantMap& parameters,
                            QgsProcessingContext& context) {
  const QVariant value = parameters.value(QStringLiteral("INPUT"));
  if (value.type() == QVariant::String && QFileInfo::exists(value.toString()))
    return value.toString().toStdString();
  QgsRasterLayer* layer = QgsProcessingParameters::parameterAsRasterLayer(
      algorithm.parameterDefinition(QStringLiteral("INPUT")), parameters, context);
  if (!layer)
    throw QgsProcessingException(
        QObject::tr("INPUT: '%1' is not a raster layer or file").arg(value.toString()));
  if (layer->providerType() != QLatin1String("gdal"))
    throw QgsProcessingException(
        QObject::tr("INPUT: '%1' is not a GDAL raster file").arg(layer->name()));
  return layer->dataProvider()->dataSourceUri().toStdString();
}

void runEngineJob(const std::function<void()>& job) {
  try {
    job();
  } catch (const Error& error) {
    const QString parameter = QString::fromStdString(error.parameter());
    throw QgsProcessingException(parameter.isEmpty()
                                     ? QString(error.what())
                                     : QStringLiteral("%1: %2").arg(parameter, error.what()));
  } catch (const Canceled&) {
    throw QgsProcessingException(QObject::tr("Canceled; no output was written"));
  }
}

}  // namespace hyperstream
