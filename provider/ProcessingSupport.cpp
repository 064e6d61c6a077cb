#include "ProcessingSupport.h"

#include "core/Error.h"
#include "io/InputFiles.h"
#include "io/PendingRaster.h"
#include "io/products/Products.h"

#include <gdal.h>
#include <qgsexception.h>
#include <qgsprocessingoutputs.h>
#include <qgsprocessingparameters.h>
#include <qgsrasterdataprovider.h>
#include <qgsrasterlayer.h>

#include <qgsproviderregistry.h>
#include <qgsvectorlayer.h>

#include <QFileInfo>

#include <optional>

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

std::string OutputFiles::file(const QString& name) {
  return asked(name, QgsProcessingParameters::parameterAsFileOutput(
                         algorithm_.parameterDefinition(name), parameters_, context_));
}

std::string OutputFiles::layer(const QString& name, OutputStyle style) {
  const QString path = QgsProcessingParameters::parameterAsOutputLayer(
      algorithm_.parameterDefinition(name), parameters_, context_);
  lookAfter(name, path, style);
  return asked(name, path);
}

std::string OutputFiles::classLayer(const QString& name,
                                    std::shared_ptr<const QStringList> classNames) {
  const QString path = QgsProcessingParameters::parameterAsOutputLayer(
      algorithm_.parameterDefinition(name), parameters_, context_);
  lookAfter(name, path, OutputStyle::Classes, std::move(classNames));
  return asked(name, path);
}

std::string OutputFiles::table(const QString& name) {
  std::string path = file(name);
  if (!path.empty() && context_.project()) {
    const QgsProcessingParameterDefinition* definition = algorithm_.parameterDefinition(name);
    context_.addLayerToLoadOnCompletion(
        QString::fromStdString(path),
        QgsProcessingContext::LayerDetails(definition->description(), context_.project(), name));
    lookAfter(name, QString::fromStdString(path), OutputStyle::AsQgisDoes);
  }
  return path;
}

void OutputFiles::lookAfter(const QString& name, const QString& path, OutputStyle style,
                            std::shared_ptr<const QStringList> classNames) {
  if (path.isEmpty() || !context_.willLoadLayerOnCompletion(path)) return;
  QgsProcessingContext::LayerDetails& details = context_.layerToLoadOnCompletionDetails(path);
  // QGIS names it after the output's label unless the user gave a name: then it stays.
  const QString label = algorithm_.parameterDefinition(name)->description();
  const QString input = QFileInfo(QString::fromStdString(input_)).completeBaseName();
  const QString named = details.name == label && !input.isEmpty()
                            ? QObject::tr("%1 of %2").arg(label, input)
                            : details.name;
  details.setPostProcessor(new OutputLook(named, style, std::move(classNames)));  // QGIS takes it
}

std::string OutputFiles::asked(const QString& name, const QString& path) {
  if (!path.isEmpty()) outputs_.insert(name, path);
  return path.toStdString();
}

bool isEngineInputName(const QVariant& value) {
  if (value.userType() != QMetaType::QString) return false;
  const std::string name = value.toString().toStdString();
  return isNonFileName(name) || isProduct(name);
}

bool isRasterFile(const QVariant& value) {
  if (value.userType() != QMetaType::QString || !QFileInfo(value.toString()).isFile()) return false;
  const QByteArray path = value.toString().toUtf8();
  return GDALIdentifyDriverEx(path.constData(), GDAL_OF_RASTER, nullptr, nullptr) != nullptr;
}

namespace {

// A value that names an existing file, used as it is: loading it as a layer would make QGIS write
// a .aux.xml beside the input.
std::optional<std::string> existingFile(const QVariant& value) {
  if (value.userType() != QMetaType::QString || !QFileInfo::exists(value.toString())) return {};
  return value.toString().toStdString();
}

}  // namespace

TableSource tableSource(const QgsProcessingAlgorithm& algorithm, const QVariantMap& parameters,
                        QgsProcessingContext& context, const QString& name) {
  const QVariant value = parameters.value(name);
  if (std::optional<std::string> file = existingFile(value)) return {*file, {}};
  QgsVectorLayer* layer = QgsProcessingParameters::parameterAsVectorLayer(
      algorithm.parameterDefinition(name), parameters, context);
  if (!layer)
    throw QgsProcessingException(
        QObject::tr("%1: '%2' is neither a file nor a loaded table").arg(name, value.toString()));
  // OGR's source is the path (and |layername=...), the delimited-text provider's a file:// URI.
  const QVariantMap parts =
      QgsProviderRegistry::instance()->decodeUri(layer->providerType(), layer->source());
  const QString path = parts.value(QStringLiteral("path")).toString();
  if (path.isEmpty() || !QFileInfo::exists(path))
    throw QgsProcessingException(
        QObject::tr("%1: the layer '%2' is not a file").arg(name, layer->name()));
  return {path.toStdString(), parts.value(QStringLiteral("layerName")).toString().toStdString()};
}

SpectraSource spectraSource(const QgsProcessingAlgorithm& algorithm, const QVariantMap& parameters,
                            QgsProcessingContext& context, const QString& table,
                            const QString& file, const QString& wavelengths) {
  const QVariant layer = parameters.value(table);
  const bool hasTable =
      layer.isValid() && !layer.isNull() &&
      !(layer.userType() == QMetaType::QString && layer.toString().trimmed().isEmpty());
  const QString library = QgsProcessingParameters::parameterAsFile(
      algorithm.parameterDefinition(file), parameters, context);
  if (hasTable == !library.isEmpty())
    throw QgsProcessingException(
        hasTable ? QObject::tr("%1: give a table or %2, not both").arg(table, file)
                 : QObject::tr("%1: give a table (a loaded layer or a file), or a spectral "
                               "library as %2")
                       .arg(table, file));
  if (hasTable) {
    const TableSource source = tableSource(algorithm, parameters, context, table);
    return {{source.path, "", source.layer}, false};
  }
  const QString channels = QgsProcessingParameters::parameterAsFile(
      algorithm.parameterDefinition(wavelengths), parameters, context);
  return {{library.toStdString(), channels.toStdString(), ""}, true};
}

std::string rasterPath(const QgsProcessingAlgorithm& algorithm, const QVariantMap& parameters,
                       QgsProcessingContext& context, const QString& name) {
  const QVariant value = parameters.value(name);
  if (std::optional<std::string> file = existingFile(value)) return *file;
  QgsRasterLayer* layer = QgsProcessingParameters::parameterAsRasterLayer(
      algorithm.parameterDefinition(name), parameters, context);
  if (!layer && isEngineInputName(value)) return value.toString().toStdString();
  if (!layer)
    throw QgsProcessingException(
        QObject::tr("%1: '%2' is not a raster layer or file").arg(name, value.toString()));
  if (layer->providerType() != QLatin1String("gdal"))
    throw QgsProcessingException(
        QObject::tr("%1: '%2' is not a GDAL raster file").arg(name, layer->name()));
  return layer->dataProvider()->dataSourceUri().toStdString();
}

std::vector<std::string> creationOptions(const QgsProcessingAlgorithm& algorithm,
                                         const QVariantMap& parameters,
                                         QgsProcessingContext& context) {
  const QgsProcessingParameterDefinition* definition =
      algorithm.parameterDefinition(QStringLiteral("CREATION_OPTIONS"));
  std::vector<std::string> options;
  if (!definition) return options;
  const QString text = QgsProcessingParameters::parameterAsString(definition, parameters, context);
  for (const QString& option : text.split('|', Qt::SkipEmptyParts))
    if (!option.trimmed().isEmpty()) options.push_back(option.trimmed().toStdString());
  return options;
}

bool checkCreationOptionsFor(const QgsProcessingAlgorithm& algorithm, const QVariantMap& parameters,
                             QgsProcessingContext& context, QString* message) {
  const std::vector<std::string> options = creationOptions(algorithm, parameters, context);
  if (options.empty()) return true;
  // The destination as typed, without resolving it (which would register a layer to load).
  QVariant destination = parameters.value(QStringLiteral("OUTPUT"));
  if (destination.canConvert<QgsProcessingOutputLayerDefinition>())
    destination = destination.value<QgsProcessingOutputLayerDefinition>().sink.staticValue();
  QString path = destination.toString();
  if (path.isEmpty() || path == QgsProcessing::TEMPORARY_OUTPUT) path = QStringLiteral("out.tif");
  try {
    checkCreationOptions(RasterFormat{outputDriver(path.toStdString(), ""), options});
    return true;
  } catch (const Error& error) {
    if (message)
      *message = QStringLiteral("%1: %2").arg(QString::fromStdString(error.parameter()),
                                              QString::fromUtf8(error.what()));
    return false;
  }
}

void runEngineJob(const std::function<void()>& job) {
  try {
    const RemoveOnTermination cleanup;  // a SIGTERM to qgis_process leaves no hidden folder
    job();
  } catch (const Error& error) {
    const QString parameter = QString::fromStdString(error.parameter());
    throw QgsProcessingException(parameter.isEmpty()
                                     ? QString(error.what())
                                     : QStringLiteral("%1: %2").arg(parameter, error.what()));
  } catch (const Canceled&) {
    throw QgsProcessingException(QObject::tr("Canceled; no output was written"));
  } catch (const std::bad_alloc&) {
    // The engine names RAM_MB itself; this is for what escapes it. Anything thrown out of an
    // algorithm's run reaches QGIS's event loop, which shows a dialog and never returns in
    // qgis_process.
    throw QgsProcessingException(QObject::tr("RAM_MB: out of memory; lower the RAM budget"));
  } catch (const std::exception& error) {
    throw QgsProcessingException(QObject::tr("Unexpected failure: %1").arg(error.what()));
  } catch (...) {
    throw QgsProcessingException(QObject::tr("Unexpected failure"));
  }
}

}  // namespace hyperstream
