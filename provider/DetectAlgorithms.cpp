#include "DetectAlgorithms.h"

#include "ProcessingSupport.h"
#include "QgisCompat.h"
#include "core/Error.h"
#include "detect/ColumnDetectJob.h"
#include "detect/LocalRxJob.h"
#include "spectra/SpectralLibrary.h"

#include <qgsprocessingoutputs.h>
#include <qgsprocessingparameters.h>

#include <QFileInfo>

#include <algorithm>

namespace hyperstream {

namespace {

constexpr DetectMethod kTargetMethods[] = {DetectMethod::MatchedFilter, DetectMethod::Ace,
                                           DetectMethod::Cem};

}  // namespace

DetectAlgorithm::DetectAlgorithm(Finds finds)
    : JobAlgorithm(finds == Finds::Anomalies ? QStringLiteral("rx") : QStringLiteral("detect")),
      finds_(finds) {}

void DetectAlgorithm::addJobParameters() {
  if (finds_ == Finds::Targets) {
    // A layer parameter, so that the table hyperstream:endmembers loaded can be picked from the
    // layer list; a CSV path is taken as it is. Its file dialog offers no spectral libraries:
    // those come as TARGET_LIBRARY. One of the two (both optional, so that either may be left
    // empty; models saved with TARGETS alone stay valid).
    addDocumented(new QgsProcessingParameterVectorLayer(
        QStringLiteral("TARGETS"),
        QObject::tr("Targets (a table of spectra, e.g. the endmembers' table or points)"),
        {static_cast<int>(compat::kVectorOrTable)}, QVariant(), true));
    addDocumented(new QgsProcessingParameterFile(
        QStringLiteral("TARGET_LIBRARY"),
        QObject::tr("Or targets from a spectral library (resampled to the bands)"), compat::kFile,
        QString(), QVariant(), true,
        QObject::tr("Spectral libraries (*.sli *.hdr *.txt *.csv *.SLI *.HDR *.TXT *.CSV);;All "
                    "files (*)")));
    addDocumented(new QgsProcessingParameterFile(
        QStringLiteral("TARGET_WAVELENGTHS"), QObject::tr("USGS spectra: wavelength file"),
        compat::kFile, QStringLiteral("txt"), QVariant(), true));
    addDocumented(new QgsProcessingParameterEnum(
        QStringLiteral("METHOD"), QObject::tr("Detector"),
        {QObject::tr("Matched filter (MF)"), QObject::tr("Adaptive cosine estimator (ACE)"),
         QObject::tr("Constrained energy minimisation (CEM)")},
        false, 0));
    // Optional, as the parameters below: models saved without them stay valid.
    addDocumented(new QgsProcessingParameterEnum(
        QStringLiteral("TARGET_MODE"), QObject::tr("The targets are"),
        {QObject::tr("Spectra (in the image's units)"),
         QObject::tr("Unit absorption spectra (e.g. methane's, per ppm m)")},
        false, 0, true));
  }
  addDocumented(new QgsProcessingParameterBoolean(
      QStringLiteral("PER_COLUMN"),
      QObject::tr("Each image column's own statistics (pushbroom sensors)"), false, true));
  if (finds_ == Finds::Anomalies) {
    addDocumented(new QgsProcessingParameterNumber(
        QStringLiteral("WINDOW"), QObject::tr("Local RX: background window (pixels; 0: the image)"),
        compat::kInteger, 0, true, 0, kMaxWindow));
    addDocumented(new QgsProcessingParameterNumber(QStringLiteral("GUARD"),
                                                   QObject::tr("Local RX: guard window (pixels)"),
                                                   compat::kInteger, 1, true, 1, kMaxWindow));
  }
  addDocumented(new QgsProcessingParameterNumber(
      QStringLiteral("COMPONENTS"),
      QObject::tr("Principal components scored (0: by the checkbox below)"), compat::kInteger, 0,
      false, 0));
  // Optional, so that models saved without it stay valid; on by default: every band's scores are
  // a salt-and-pepper map on real scenes.
  addDocumented(new QgsProcessingParameterBoolean(
      QStringLiteral("SIGNAL_SUBSPACE"),
      QObject::tr("Score only the dimensions that hold signal (as many as the scene has "
                  "materials); unchecked: every band"),
      true, true));
  // Optional without a default: empty is each column's noise variance with PER_COLUMN, else 0.
  auto* shrinkage = new QgsProcessingParameterNumber(
      QStringLiteral("SHRINKAGE"), QObject::tr("Shrinkage (share of the mean band variance)"),
      compat::kDouble, QVariant(), true, 0.0, 0.999);
  shrinkage->setMetadata(
      {{QStringLiteral("widget_wrapper"), QVariantMap{{QStringLiteral("decimals"), 8}}}});
  addDocumented(shrinkage);
  addDocumented(new QgsProcessingParameterEnum(
      QStringLiteral("OUTPUT_TYPE"), QObject::tr("Output data type"),
      {QStringLiteral("Float32"), QStringLiteral("Float64")}, false, 0));
}

// Band 1's scores on a colour ramp, not an RGB of three targets' scores.
std::string DetectAlgorithm::resolveOutput(OutputFiles& files) {
  return files.layer(QStringLiteral("OUTPUT"), OutputStyle::Scores);
}

void DetectAlgorithm::addJobOutputs() {
  addOptionalFileOutput(QStringLiteral("OUTPUT_STATS"), QObject::tr("Statistics (JSON)"),
                        QObject::tr("JSON files (*.json)"));
  addOptionalFileOutput(QStringLiteral("OUTPUT_HTML_FILE"), QObject::tr("Report (HTML)"),
                        QObject::tr("HTML files (*.html)"), true);
  addOutput(new QgsProcessingOutputNumber(QStringLiteral("N_COMPONENTS"),
                                          QObject::tr("Principal components scored")));
}

// The targets: TARGETS' table, or TARGET_LIBRARY's spectra (with TARGET_WAVELENGTHS for USGS
// ones); one of the two.
void DetectAlgorithm::chooseTargets(const QVariantMap& parameters, QgsProcessingContext& context) {
  const SpectraSource source =
      spectraSource(*this, parameters, context, QStringLiteral("TARGETS"),
                    QStringLiteral("TARGET_LIBRARY"), QStringLiteral("TARGET_WAVELENGTHS"));
  targets_ = source.files;
  targetsFromLibrary_ = source.fromFile;
}

// `job` with the targets read, the errors about them naming TARGET_LIBRARY where they came from
// it (the engine names TARGETS: reading, resampling to the bands, a target equal to the mean).
template <class Job>
auto DetectAlgorithm::withTargets(const Job& job) {
  try {
    if (finds_ == Finds::Targets) options_.targetTable = readTargets(targets_);
    return job();
  } catch (const Error& error) {
    if (!targetsFromLibrary_ || error.parameter() != "TARGETS") throw;
    throw Error("TARGET_LIBRARY", error.what());
  }
}

void DetectAlgorithm::prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) {
  options_.detector = DetectorOptions{};
  options_.targetTable = DetectTargets{};
  if (finds_ == Finds::Targets) {
    options_.detector.method = kTargetMethods[std::clamp(
        parameterAsEnum(parameters, QStringLiteral("METHOD"), context), 0, 2)];
    chooseTargets(parameters, context);
    options_.detector.absorption =
        parameterAsEnum(parameters, QStringLiteral("TARGET_MODE"), context) == 1;
  }
  perColumn_ = parameterAsBoolean(parameters, QStringLiteral("PER_COLUMN"), context);
  window_ = finds_ == Finds::Anomalies
                ? parameterAsInt(parameters, QStringLiteral("WINDOW"), context)
                : 0;
  guard_ =
      finds_ == Finds::Anomalies ? parameterAsInt(parameters, QStringLiteral("GUARD"), context) : 1;
  options_.detector.components = parameterAsInt(parameters, QStringLiteral("COMPONENTS"), context);
  // Each column's statistics take every band.
  if (options_.detector.components == 0 && !perColumn_ &&
      parameterAsBoolean(parameters, QStringLiteral("SIGNAL_SUBSPACE"), context))
    options_.detector.components = kSceneMaterials;
  const QVariant shrinkage = parameters.value(QStringLiteral("SHRINKAGE"));
  if (shrinkage.isValid() && !shrinkage.isNull())
    options_.detector.shrinkage =
        parameterAsDouble(parameters, QStringLiteral("SHRINKAGE"), context);
  options_.outputType = parameterAsEnum(parameters, QStringLiteral("OUTPUT_TYPE"), context) == 1
                            ? OutputType::Float64
                            : OutputType::Float32;
}

EngineAlgorithm::RunReport DetectAlgorithm::runJob(OutputFiles& files,
                                                   QgsProcessingFeedback* feedback) {
  options_.statsJson = files.file(QStringLiteral("OUTPUT_STATS"));
  options_.htmlReport = files.file(QStringLiteral("OUTPUT_HTML_FILE"));
  if (window_ > 0) {
    const LocalRxResult result = runEngineJob(feedback, [&](Feedback& engine) -> LocalRxResult {
      if (perColumn_)
        throw Error("WINDOW",
                    "a background window and PER_COLUMN are two backgrounds: "
                    "choose one");
      return runLocalRx(localRxOptions(options_, window_, guard_), engine);
    });
    return {
        result.validPixels, result.backend, {{QStringLiteral("N_COMPONENTS"), result.components}}};
  }
  if (perColumn_) {
    const ColumnDetectResult result = runEngineJob(feedback, [&](Feedback& engine) {
      return withTargets([&] { return runColumnDetection(perColumnOptions(options_), engine); });
    });
    return {result.validPixels, result.backend, {{QStringLiteral("N_COMPONENTS"), 0}}};
  }
  const DetectResult result = runEngineJob(feedback, [&](Feedback& engine) {
    return withTargets([&] { return runDetection(options_, engine); });
  });
  return {result.model.validPixels,
          result.backend,
          {{QStringLiteral("N_COMPONENTS"), result.detector.components}}};
}

void SamAlgorithm::addJobParameters() {
  // A layer parameter, so that the table (or the points) hyperstream:endmembers loaded can be
  // picked from the layer list, and a file one for libraries, which the layer dialog does not
  // offer; one of the two (both optional, so that models saved with LIBRARY alone stay valid).
  addDocumented(new QgsProcessingParameterVectorLayer(
      QStringLiteral("LIBRARY_TABLE"),
      QObject::tr("Spectra from a loaded table (e.g. the endmembers' table or points)"),
      {static_cast<int>(compat::kVectorOrTable)}, QVariant(), true));
  addDocumented(new QgsProcessingParameterFile(
      QStringLiteral("LIBRARY"), QObject::tr("Or a spectral library file"), compat::kFile,
      QString(), QVariant(), true,
      QObject::tr("Spectral libraries (*.csv *.sli *.hdr *.txt *.gpkg *.CSV *.SLI *.HDR *.TXT);;"
                  "All files (*)")));
  addDocumented(new QgsProcessingParameterBoolean(
      QStringLiteral("WHOLE_FOLDER"),
      QObject::tr("USGS spectra: every spectrum in the library file's folder"), false, true));
  addDocumented(new QgsProcessingParameterFile(
      QStringLiteral("LIBRARY_WAVELENGTHS"), QObject::tr("USGS spectra: wavelength file"),
      compat::kFile, QStringLiteral("txt"), QVariant(), true));
  auto* angle = new QgsProcessingParameterNumber(
      QStringLiteral("MAX_ANGLE"), QObject::tr("Largest angle classified (radians; 0: any)"),
      compat::kDouble, 0.0, false, 0.0, kAnyAngle);
  angle->setMetadata(
      {{QStringLiteral("widget_wrapper"), QVariantMap{{QStringLiteral("decimals"), 4}}}});
  addDocumented(angle);
  addDocumented(new QgsProcessingParameterEnum(
      QStringLiteral("OUTPUT_TYPE"), QObject::tr("Angles' data type"),
      {QStringLiteral("Float32"), QStringLiteral("Float64")}, false, 0));
}

// The class map in the library's colours, its legend the spectra's names.
std::string SamAlgorithm::resolveOutput(OutputFiles& files) {
  return files.classLayer(QStringLiteral("OUTPUT"), classNames_);
}

void SamAlgorithm::addJobOutputs() {
  addOptionalRasterOutput(QStringLiteral("OUTPUT_ANGLE"), QObject::tr("Angle to the class"), true);
  addOptionalRasterOutput(QStringLiteral("OUTPUT_ANGLES"), QObject::tr("Angle to every spectrum"));
  addOptionalFileOutput(QStringLiteral("OUTPUT_COUNTS"), QObject::tr("Class counts"),
                        QObject::tr("CSV files (*.csv)"), true);
  addOptionalFileOutput(QStringLiteral("OUTPUT_HTML_FILE"), QObject::tr("Report (HTML)"),
                        QObject::tr("HTML files (*.html)"), true);
  addOutput(new QgsProcessingOutputNumber(QStringLiteral("N_CLASSES"),
                                          QObject::tr("Spectra in the library")));
  addOutput(new QgsProcessingOutputNumber(QStringLiteral("UNCLASSIFIED"),
                                          QObject::tr("Valid pixels left unclassified")));
}

void SamAlgorithm::prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) {
  const SpectraSource source =
      spectraSource(*this, parameters, context, QStringLiteral("LIBRARY_TABLE"),
                    QStringLiteral("LIBRARY"), QStringLiteral("LIBRARY_WAVELENGTHS"));
  options_.library = source.files;
  libraryFromFile_ = source.fromFile;
  if (source.fromFile && parameterAsBoolean(parameters, QStringLiteral("WHOLE_FOLDER"), context))
    options_.library.library =
        QFileInfo(QString::fromStdString(source.files.library)).absolutePath().toStdString();
  const double maxAngle = parameterAsDouble(parameters, QStringLiteral("MAX_ANGLE"), context);
  options_.maxAngle = maxAngle > 0 ? maxAngle : kAnyAngle;
  options_.outputType = parameterAsEnum(parameters, QStringLiteral("OUTPUT_TYPE"), context) == 1
                            ? OutputType::Float64
                            : OutputType::Float32;
}

EngineAlgorithm::RunReport SamAlgorithm::runJob(OutputFiles& files,
                                                QgsProcessingFeedback* feedback) {
  options_.angleOutput =
      files.layer(QStringLiteral("OUTPUT_ANGLE"), OutputStyle::PercentileStretch);
  options_.anglesOutput = files.layer(QStringLiteral("OUTPUT_ANGLES"), OutputStyle::AsQgisDoes);
  options_.countsCsv = files.table(QStringLiteral("OUTPUT_COUNTS"));
  options_.htmlReport = files.file(QStringLiteral("OUTPUT_HTML_FILE"));
  const SamResult result = runEngineJob(feedback, [&](Feedback& engine) {
    try {
      return runSpectralAngles(options_, engine);
    } catch (const Error& error) {  // the engine names LIBRARY, whichever parameter gave it
      if (libraryFromFile_ || error.parameter() != "LIBRARY") throw;
      throw Error("LIBRARY_TABLE", error.what());
    }
  });
  for (const Target& spectrum : result.library)
    classNames_->append(QString::fromStdString(spectrum.name));
  return {result.validPixels,
          result.backend,
          {{QStringLiteral("N_CLASSES"), static_cast<int>(result.library.size())},
           {QStringLiteral("UNCLASSIFIED"), static_cast<qlonglong>(result.classCounts.front())}}};
}

}  // namespace hyperstream
