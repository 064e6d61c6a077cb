#include "UnmixingAlgorithms.h"

#include <QFileInfo>

#include "ProcessingSupport.h"
#include "QgisCompat.h"

#include <qgsprocessingoutputs.h>
#include <qgsprocessingparameters.h>

#include <algorithm>

namespace hyperstream {

namespace {

constexpr EndmemberMethod kMethods[] = {EndmemberMethod::Vca, EndmemberMethod::Nfindr,
                                        EndmemberMethod::Atgp};
constexpr VcaProjection kProjections[] = {VcaProjection::Auto, VcaProjection::Projective,
                                          VcaProjection::Subspace};
constexpr AbundanceMethod kAbundanceMethods[] = {AbundanceMethod::Fcls, AbundanceMethod::Nnls,
                                                 AbundanceMethod::Ucls};

template <class Parameter>
Parameter* advanced(Parameter* parameter) {
  parameter->setFlags(parameter->flags() | compat::kAdvanced);
  return parameter;
}

}  // namespace

void EndmembersAlgorithm::addJobParameters() {
  addDocumented(new QgsProcessingParameterNumber(
      QStringLiteral("COUNT"),
      QObject::tr("Number of endmembers (0: as many as the scene has materials)"), compat::kInteger,
      0, false, 0, kMaxEndmembers));
  addDocumented(new QgsProcessingParameterEnum(
      QStringLiteral("METHOD"), QObject::tr("Method"),
      {QObject::tr("VCA"), QObject::tr("N-FINDR (from ATGP)"), QObject::tr("ATGP")}, false, 0));
  addDocumented(new QgsProcessingParameterRasterLayer(
      QStringLiteral("LOCATIONS"), QObject::tr("Search in (e.g. the SPP output)"), QVariant(),
      true));
  addDocumented(new QgsProcessingParameterNumber(
      QStringLiteral("AVERAGE_WINDOW"), QObject::tr("Average spectra over a homogeneous window"),
      compat::kInteger, 1, false, 1, 15));
  addDocumented(advanced(new QgsProcessingParameterEnum(
      QStringLiteral("VCA_PROJECTION"), QObject::tr("VCA projection"),
      {QObject::tr("Auto (by VCA's SNR estimate)"), QObject::tr("Projective"),
       QObject::tr("Subspace")},
      false, 0)));
  addDocumented(advanced(new QgsProcessingParameterNumber(
      QStringLiteral("SEED"), QObject::tr("VCA random seed"), compat::kInteger, 1, false, 1)));
}

QgsProcessingDestinationParameter* EndmembersAlgorithm::createMainOutput(
    const QString& label) const {
  return new QgsProcessingParameterFileDestination(QStringLiteral("OUTPUT"), label,
                                                   QObject::tr("CSV files (*.csv)"));
}

// The table loads as a layer beside the points, for Abundances' ENDMEMBERS to pick.
std::string EndmembersAlgorithm::resolveOutput(OutputFiles& files) {
  return files.table(QStringLiteral("OUTPUT"));
}

void EndmembersAlgorithm::addJobOutputs() {
  addDocumented(new QgsProcessingParameterVectorDestination(
      QStringLiteral("OUTPUT_POINTS"), QObject::tr("Endmember pixels"), compat::kVectorPoint,
      QVariant(), true, true));
  addOptionalFileOutput(QStringLiteral("OUTPUT_HTML_FILE"), QObject::tr("Report (HTML)"),
                        QObject::tr("HTML files (*.html)"), true);
  addOutput(new QgsProcessingOutputNumber(QStringLiteral("PASSES"),
                                          QObject::tr("Passes over the image")));
}

void EndmembersAlgorithm::prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) {
  const int count = parameterAsInt(parameters, QStringLiteral("COUNT"), context);
  options_.search.count = count == 0 ? kCountFromScene : count;
  options_.search.method =
      kMethods[std::clamp(parameterAsEnum(parameters, QStringLiteral("METHOD"), context), 0, 2)];
  options_.search.projection = kProjections[std::clamp(
      parameterAsEnum(parameters, QStringLiteral("VCA_PROJECTION"), context), 0, 2)];
  options_.search.seed =
      static_cast<uint64_t>(parameterAsInt(parameters, QStringLiteral("SEED"), context));
  options_.averageWindow = parameterAsInt(parameters, QStringLiteral("AVERAGE_WINDOW"), context);
  options_.locations.clear();
  if (parameters.value(QStringLiteral("LOCATIONS")).isValid() &&
      !parameters.value(QStringLiteral("LOCATIONS")).toString().isEmpty())
    options_.locations = rasterPath(*this, parameters, context, QStringLiteral("LOCATIONS"));
}

bool EndmembersAlgorithm::checkJobParameters(const QVariantMap& parameters,
                                             QgsProcessingContext& context,
                                             QString* message) const {
  const int window = parameterAsInt(parameters, QStringLiteral("AVERAGE_WINDOW"), context);
  if (window % 2 == 0) {
    if (message)
      *message =
          QObject::tr("AVERAGE_WINDOW: the window must be odd (1, 3, ..., 15), not %1").arg(window);
    return false;
  }
  return true;
}

EngineAlgorithm::RunReport EndmembersAlgorithm::runJob(OutputFiles& files,
                                                       QgsProcessingFeedback* feedback) {
  options_.pointsOutput = files.layer(QStringLiteral("OUTPUT_POINTS"), OutputStyle::LabelledPoints);
  options_.htmlReport = files.file(QStringLiteral("OUTPUT_HTML_FILE"));
  const EndmemberResult result =
      runEngineJob(feedback, [&](Feedback& engine) { return runEndmembers(options_, engine); });
  return {result.search.validPixels,
          result.backend,
          {{QStringLiteral("PASSES"), result.search.passes}}};
}

void AbundancesAlgorithm::addJobParameters() {
  // A layer parameter, so that the table hyperstream:endmembers loaded can be picked from the
  // layer list; a CSV path is taken as it is.
  addDocumented(new QgsProcessingParameterVectorLayer(
      QStringLiteral("ENDMEMBERS"),
      QObject::tr("Endmembers (a table of spectra, e.g. the endmembers' table or points)"),
      {static_cast<int>(compat::kVectorOrTable)}));
  addDocumented(new QgsProcessingParameterEnum(
      QStringLiteral("METHOD"), QObject::tr("Constraints"),
      {QObject::tr("FCLS (non-negative, summing to one)"), QObject::tr("NNLS (non-negative)"),
       QObject::tr("UCLS (unconstrained)")},
      false, 0));
  addDocumented(new QgsProcessingParameterEnum(
      QStringLiteral("OUTPUT_TYPE"), QObject::tr("Output data type"),
      {QStringLiteral("Float32"), QStringLiteral("Float64")}, false, 0));
}

// One band (the first endmember's share) from 0 to 1 on a ramp, not an RGB of three shares.
std::string AbundancesAlgorithm::resolveOutput(OutputFiles& files) {
  return files.layer(QStringLiteral("OUTPUT"), OutputStyle::Abundances);
}

void AbundancesAlgorithm::addJobOutputs() {
  addOptionalRasterOutput(QStringLiteral("OUTPUT_RMSE"), QObject::tr("Reconstruction error (RMSE)"),
                          true);
  addOptionalFileOutput(QStringLiteral("OUTPUT_HTML_FILE"), QObject::tr("Report (HTML)"),
                        QObject::tr("HTML files (*.html)"), true);
}

void AbundancesAlgorithm::prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) {
  const TableSource endmembers =
      tableSource(*this, parameters, context, QStringLiteral("ENDMEMBERS"));
  options_.endmembers = endmembers.path;
  options_.layer = endmembers.layer;
  options_.method = kAbundanceMethods[std::clamp(
      parameterAsEnum(parameters, QStringLiteral("METHOD"), context), 0, 2)];
  options_.outputType = parameterAsEnum(parameters, QStringLiteral("OUTPUT_TYPE"), context) == 1
                            ? OutputType::Float64
                            : OutputType::Float32;
}

EngineAlgorithm::RunReport AbundancesAlgorithm::runJob(OutputFiles& files,
                                                       QgsProcessingFeedback* feedback) {
  options_.rmseOutput = files.layer(QStringLiteral("OUTPUT_RMSE"), OutputStyle::PercentileStretch);
  options_.htmlReport = files.file(QStringLiteral("OUTPUT_HTML_FILE"));
  const AbundanceResult result =
      runEngineJob(feedback, [&](Feedback& engine) { return runAbundances(options_, engine); });
  return {result.validPixels, result.backend, {}};
}

}  // namespace hyperstream
