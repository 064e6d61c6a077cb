#include "EngineAlgorithm.h"

#include "HyperstreamProvider.h"
#include "ProcessingSupport.h"
#include "QgisCompat.h"
#include "core/Error.h"
#include "run/GpuRuntime.h"

#include <qgsapplication.h>
#include <qgsexception.h>
#include <qgsprocessingfeedback.h>
#include <qgsprocessingoutputs.h>
#include <qgsprocessingparameters.h>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QUrl>

#include <algorithm>
#include <cmath>
#include <limits>

namespace hyperstream {

namespace {

// RAM_MB in bytes. Read as a number, not an int: parameterAsInt wraps from 2^31 MiB on. A budget
// beyond what 64 bits of bytes hold is no limit at all.
int64_t ramBudget(double mebibytes) {
  constexpr auto largest = static_cast<double>(std::numeric_limits<int64_t>::max() >> 20);
  if (!(mebibytes >= 16))
    throw QgsProcessingException(QObject::tr("RAM_MB: the RAM budget must be at least 16 MiB"));
  return static_cast<int64_t>(std::min(std::floor(mebibytes), largest)) << 20;
}

QJsonObject readTextsResource(const QString& name) {
  QFile file(QStringLiteral(":/hyperstream/texts/%1.json").arg(name));
  if (!file.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(file.readAll()).object();
}

void addParameterHelp(QMap<QString, QString>& help, const QJsonObject& texts) {
  const QJsonObject parameters = texts.value(QStringLiteral("parameters")).toObject();
  for (auto it = parameters.begin(); it != parameters.end(); ++it)
    help.insert(it.key(), it.value().toString());
}

EngineAlgorithm::Texts readTexts(const QString& name) {
  const QJsonObject json = readTextsResource(name);
  EngineAlgorithm::Texts texts;
  texts.name = name;
  texts.displayName = json.value(QStringLiteral("displayName")).toString(name);
  texts.group = json.value(QStringLiteral("group")).toString();
  texts.groupId = json.value(QStringLiteral("groupId")).toString();
  for (const QJsonValue tag : json.value(QStringLiteral("tags")).toArray())
    texts.tags << tag.toString();
  QStringList paragraphs;
  for (const QJsonValue paragraph : json.value(QStringLiteral("help")).toArray())
    paragraphs << paragraph.toString();
  texts.help = paragraphs.join(QStringLiteral("\n\n"));
  texts.outputName = json.value(QStringLiteral("outputName")).toString();
  addParameterHelp(texts.parameterHelp, readTextsResource(QStringLiteral("common")));
  addParameterHelp(texts.parameterHelp, json);
  return texts;
}

// Why this machine has no GPU for the DEVICE choices, or empty: the NVIDIA driver alone is looked
// for (cheap; loading the CUDA library and cuBLAS would cost 0.4 s and 200 MiB at QGIS's start),
// once.
QString noGpuHere() {
  static const QString reason = [] {
    std::string whyNot;
    return gpuDriverPresent(&whyNot) ? QString()
                                     : QObject::tr("no usable GPU on this machine: %1")
                                           .arg(QString::fromStdString(whyNot));
  }();
  return reason;
}

bool writesRaster(const QgsProcessingParameterDefinition& output) {
  return output.type() == QgsProcessingParameterRasterDestination::typeName();
}

template <class Parameter>
Parameter* advanced(Parameter* parameter) {
  parameter->setFlags(parameter->flags() | compat::kAdvanced);
  return parameter;
}

}  // namespace

EngineAlgorithm::EngineAlgorithm(const QString& name) : texts_(readTexts(name)) {}

QIcon EngineAlgorithm::icon() const {
  return QIcon(svgIconPath());
}

QString EngineAlgorithm::svgIconPath() const {
  return QStringLiteral(":/hyperstream/icons/%1.svg").arg(name());
}

QString EngineAlgorithm::helpUrl() const {
  const auto* hyperstream = dynamic_cast<const HyperstreamProvider*>(provider());
  if (!hyperstream || hyperstream->helpFolder().isEmpty()) return {};
  const QString page = QDir(hyperstream->helpFolder()).filePath(name() + ".html");
  return QFile::exists(page) ? QUrl::fromLocalFile(page).toString() : QString();
}

void EngineAlgorithm::initAlgorithm(const QVariantMap&) {
  addDocumented(
      new QgsProcessingParameterRasterLayer(QStringLiteral("INPUT"), QObject::tr("Input raster")));
  addDocumented(new QgsProcessingParameterBand(QStringLiteral("BANDS"), QObject::tr("Bands"),
                                               QVariant(), QStringLiteral("INPUT"), true, true));
  addDocumented(new QgsProcessingParameterString(
      QStringLiteral("BAND_LIST"), QObject::tr("Bands as numbers and ranges (e.g. 1-100,120-198)"),
      QVariant(), false, true));
  if (readsSpectra()) {
    addDocumented(new QgsProcessingParameterString(
        QStringLiteral("EXCLUDE_NM"),
        QObject::tr("Leave out wavelengths in nm (e.g. 1340-1450,1790-1960)"), QVariant(), false,
        true));
    addDocumented(new QgsProcessingParameterBoolean(
        QStringLiteral("USE_BBL"), QObject::tr("Leave out the file's bad bands (ENVI bbl)"), false,
        true));  // optional: models saved before it existed stay valid
  }
  addDocumented(new QgsProcessingParameterNumber(
      QStringLiteral("NODATA"), QObject::tr("Input nodata value (in place of the file's)"),
      compat::kDouble, QVariant(), true));
  addJobParameters();
  // The GPU choices stay (their indices are saved in models and scripts), saying so where this
  // machine has no GPU to run them.
  const QString none = noGpuHere();
  const QString unusable = none.isEmpty() ? QString() : QObject::tr(" (%1)").arg(none);
  QStringList devices = {QObject::tr("Auto"), QObject::tr("CPU"), QObject::tr("GPU") + unusable};
  if (runsOnSeveralGpus()) devices << QObject::tr("All GPUs") + unusable;
  addDocumented(advanced(new QgsProcessingParameterEnum(
      QStringLiteral("DEVICE"), QObject::tr("Compute device"), devices, false, 0)));
  addDocumented(advanced(new QgsProcessingParameterNumber(QStringLiteral("RAM_MB"),
                                                          QObject::tr("RAM budget (MiB)"),
                                                          compat::kInteger, 1024, false, 16)));
  QgsProcessingDestinationParameter* output = createMainOutput(texts_.outputName);
  if (writesRaster(*output)) {
    addDocumented(new QgsProcessingParameterBoolean(
        QStringLiteral("ORTHORECTIFY"), QObject::tr("Outputs on the input's map grid (EMIT's GLT)"),
        false, true));
    auto* creation =
        new QgsProcessingParameterString(QStringLiteral("CREATION_OPTIONS"),
                                         QObject::tr("Creation options"), QVariant(), false, true);
    // GDAL's creation-options editor (profiles, a table, Validate); options joined by '|'.
    creation->setMetadata(compat::creationOptionsWidget());
    addDocumented(advanced(creation));
  }
  addDocumented(output);
  addJobOutputs();
  addOutput(
      new QgsProcessingOutputNumber(QStringLiteral("VALID_PIXELS"), QObject::tr("Valid pixels")));
  addOutput(new QgsProcessingOutputString(QStringLiteral("DEVICE_USED"),
                                          QObject::tr("Compute device used")));
}

QgsProcessingDestinationParameter* EngineAlgorithm::createMainOutput(const QString& label) const {
  return new QgsProcessingParameterRasterDestination(QStringLiteral("OUTPUT"), label);
}

void EngineAlgorithm::addDocumented(QgsProcessingParameterDefinition* parameter) {
  parameter->setHelp(texts_.parameterHelp.value(parameter->name()));
  addParameter(parameter);
}

void EngineAlgorithm::addOptionalFileOutput(const QString& name, const QString& label,
                                            const QString& filter, bool offered) {
  addDocumented(
      new QgsProcessingParameterFileDestination(name, label, filter, QVariant(), true, offered));
}

void EngineAlgorithm::addOptionalRasterOutput(const QString& name, const QString& label,
                                              bool offered) {
  addDocumented(
      new QgsProcessingParameterRasterDestination(name, label, QVariant(), true, offered));
}

void EngineAlgorithm::readBandSelection(const QVariantMap& parameters,
                                        QgsProcessingContext& context, JobOptions& options) const {
  options.bands.clear();
  for (int band : parameterAsInts(parameters, QStringLiteral("BANDS"), context))
    options.bands.push_back(band);
  const QString typed = parameterAsString(parameters, QStringLiteral("BAND_LIST"), context);
  if (!typed.trimmed().isEmpty()) {
    if (!options.bands.empty())
      throw Error("BAND_LIST", "give the bands either as BANDS or as BAND_LIST, not both");
    options.bands = parseBandList(typed.toStdString(), "BAND_LIST");
  }
  const QString nanometres = parameterAsString(parameters, QStringLiteral("EXCLUDE_NM"), context);
  options.exclude.nanometres.clear();
  if (!nanometres.trimmed().isEmpty())
    options.exclude.nanometres = parseNanometreRanges(nanometres.toStdString());
  options.exclude.badBandList = parameterAsBoolean(parameters, QStringLiteral("USE_BBL"), context);
  const QVariant nodata = parameters.value(QStringLiteral("NODATA"));
  options.nodata.reset();
  if (nodata.isValid() && !nodata.isNull() && !nodata.toString().trimmed().isEmpty())
    options.nodata = parameterAsDouble(parameters, QStringLiteral("NODATA"), context);
}

bool EngineAlgorithm::prepareAlgorithm(const QVariantMap& parameters, QgsProcessingContext& context,
                                       QgsProcessingFeedback*) {
  JobOptions& options = jobOptions();
  options.input = rasterPath(*this, parameters, context);
  try {
    readBandSelection(parameters, context, options);
    bandsTyped_ =
        !parameterAsString(parameters, QStringLiteral("BAND_LIST"), context).trimmed().isEmpty();
  } catch (const Error& error) {
    throw QgsProcessingException(
        QStringLiteral("%1: %2").arg(QString::fromStdString(error.parameter()), error.what()));
  }
  const int device = parameterAsEnum(parameters, QStringLiteral("DEVICE"), context);
  options.device =
      runsOnSeveralGpus()
          ? chosen(device, {DeviceChoice(), DeviceChoice::cpu(), DeviceChoice::anyGpu(),
                            DeviceChoice::everyGpu()})
          : chosen(device, {DeviceChoice(), DeviceChoice::cpu(), DeviceChoice::anyGpu()});
  options.ramBytes = ramBudget(parameterAsDouble(parameters, QStringLiteral("RAM_MB"), context));
  options.orthorectify = parameters.contains(QStringLiteral("ORTHORECTIFY")) &&
                         parameterAsBoolean(parameters, QStringLiteral("ORTHORECTIFY"), context);
  options.creationOptions = creationOptions(*this, parameters, context);
  prepareJob(parameters, context);
  return true;
}

bool EngineAlgorithm::checkLayerValues(const QVariantMap& parameters, QgsProcessingContext& context,
                                       QString* message) const {
  // QGIS's own check, except that a raster given by a GDAL name QGIS cannot load from a string is
  // left to the engine (which names the parameter when it cannot open it).
  for (const QgsProcessingParameterDefinition* definition : parameterDefinitions()) {
    const QVariant value = parameters.value(definition->name());
    // A raster file given by its path: GDAL's identification, in microseconds, where QGIS
    // would load it as a layer on the GUI thread when Run is clicked (seconds for a large
    // compressed file, whose statistics it estimates); the engine opens it later anyway.
    if (definition->type() == QgsProcessingParameterRasterLayer::typeName() && isRasterFile(value))
      continue;
    if (definition->checkValueIsAcceptable(value, &context)) continue;
    if (definition->type() == QgsProcessingParameterRasterLayer::typeName() &&
        isEngineInputName(value))
      continue;
    if (message)
      *message = definition->type() == QgsProcessingParameterRasterLayer::typeName()
                     ? invalidRasterError(parameters, definition->name())
                     : QObject::tr("Incorrect parameter value for %1").arg(definition->name());
    return false;
  }
  return true;
}

bool EngineAlgorithm::checkParameterValues(const QVariantMap& parameters,
                                           QgsProcessingContext& context, QString* message) const {
  if (!checkLayerValues(parameters, context, message)) return false;
  JobOptions selection;
  try {
    readBandSelection(parameters, context, selection);
  } catch (const Error& error) {
    if (message)
      *message =
          QStringLiteral("%1: %2").arg(QString::fromStdString(error.parameter()), error.what());
    return false;
  }
  return checkCreationOptionsFor(*this, parameters, context, message) &&
         checkJobParameters(parameters, context, message);
}

std::string EngineAlgorithm::resolveOutput(OutputFiles& files) {
  return writesRaster(*parameterDefinition(QStringLiteral("OUTPUT")))
             ? files.layer(QStringLiteral("OUTPUT"))
             : files.file(QStringLiteral("OUTPUT"));
}

QVariantMap EngineAlgorithm::processAlgorithm(const QVariantMap& parameters,
                                              QgsProcessingContext& context,
                                              QgsProcessingFeedback* feedback) {
  // Outputs are resolved here, on the context of the run: the background task of the dialog
  // loads the layers registered on it, not those of the context prepareAlgorithm was given.
  OutputFiles files(*this, parameters, context, jobOptions().input);
  jobOptions().output = resolveOutput(files);
  RunReport report;
  try {
    report = runJob(files, feedback);
  } catch (const QgsProcessingException& error) {
    // The engine's errors name BANDS, the bands it was given; the user typed them as BAND_LIST.
    const QString message = error.what();
    if (bandsTyped_ && message.startsWith(QStringLiteral("BANDS: ")))
      throw QgsProcessingException(QStringLiteral("BAND_LIST: ") + message.mid(7));
    throw;
  }
  const QString device = QString::fromStdString(report.device);
  if (feedback) feedback->pushInfo(QObject::tr("Computed on %1").arg(device));
  QVariantMap outputs = files.outputs();
  outputs.insert(report.values);
  outputs.insert(QStringLiteral("VALID_PIXELS"), static_cast<double>(report.validPixels));
  outputs.insert(QStringLiteral("DEVICE_USED"), device);
  return outputs;
}

}  // namespace hyperstream
