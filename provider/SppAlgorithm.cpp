#include "SppAlgorithm.h"

#include "ProcessingSupport.h"

#include <qgsapplication.h>
#include <qgsprocessingoutputs.h>

namespace hyperstream {

namespace {

EngineAlgorithm::Texts sppTexts() {
  EngineAlgorithm::Texts texts;
  texts.name = QStringLiteral("spp");
  texts.displayName = QObject::tr("Spatial preprocessing (SPP)");
  texts.group = QObject::tr("Spectral unmixing");
  texts.groupId = QStringLiteral("spectralunmixing");
  texts.tags =
      QObject::tr("spp,spatial,preprocessing,endmember,unmixing,hyperspectral,spectral angle");
  texts.help = QObject::tr(
      "Spatial preprocessing (Zortea & Plaza, 2009) of a hyperspectral raster: each pixel moves "
      "toward the image's mean spectrum by how much it differs, in spectral angle, from its "
      "neighbours within the window, so that an endmember extraction run afterwards prefers "
      "spatially homogeneous areas.\n\n"
      "alpha = the neighbours' spectral angles weighted by 1/distance², rho = (1 + sqrt(alpha))², "
      "y' = (y - c) / rho + c with c the mean spectrum. Pixels with nodata, a non-finite value or "
      "an all-zero spectrum are left out and written as nodata. Streamed in strips with their "
      "halo rows, on a GPU or all CPU cores; a failed or canceled run leaves no output behind.");
  texts.bandsHelp = QObject::tr("Bands to use and write; all when none is selected.");
  texts.deviceHelp = QObject::tr(
      "Auto uses the first GPU when one can be used and the image is large enough for it to "
      "pay for starting CUDA (about 0.3 s, once per session), and the CPU's cores otherwise; "
      "the log says what it chose and why. GPU fails when no GPU can be used. A GPU error "
      "during an Auto run makes it start again on the CPU.");
  texts.ramHelp = QObject::tr(
      "Memory for image data; strips and their halo rows are sized from it. A "
      "compressed input that does not fit is first decompressed once into a "
      "temporary copy beside the output.");
  texts.outputName = QObject::tr("Preprocessed image");
  texts.outputHelp = QObject::tr("The displaced spectra, same bands as the input.");
  return texts;
}

}  // namespace

SppAlgorithm::SppAlgorithm() : EngineAlgorithm(sppTexts()) {}

void SppAlgorithm::addJobParameters() {
  addParameter(withHelp(
      new QgsProcessingParameterNumber(QStringLiteral("WINDOW"), QObject::tr("Window size"),
                                       QgsProcessingParameterNumber::Integer, 5, false, 3, 15),
      QObject::tr("Odd size in pixels of the square neighbourhood, 3 to 15.")));
  addParameter(withHelp(
      new QgsProcessingParameterEnum(QStringLiteral("BORDER"), QObject::tr("Border"),
                                     {QObject::tr("Truncate"), QObject::tr("Mirror")}, false, 0),
      QObject::tr("Truncate leaves out neighbours outside the image; Mirror reflects the window "
                  "at the edge without repeating the edge pixel.")));
  addParameter(withHelp(new QgsProcessingParameterEnum(
                            QStringLiteral("OUTPUT_TYPE"), QObject::tr("Output data type"),
                            {QStringLiteral("Float32"), QStringLiteral("Float64")}, false, 0),
                        QObject::tr("Data type of the displaced spectra.")));
}

void SppAlgorithm::addJobOutputs() {
  addParameter(withHelp(
      new QgsProcessingParameterRasterDestination(QStringLiteral("OUTPUT_ALPHA"),
                                                  QObject::tr("Alpha (mean neighbour angle)"),
                                                  QVariant(), true, false),
      QObject::tr("One band: alpha in radians; nodata where the pixel is not valid.")));
  addParameter(withHelp(new QgsProcessingParameterRasterDestination(
                            QStringLiteral("OUTPUT_RHO"), QObject::tr("Rho (shrink factor)"),
                            QVariant(), true, false),
                        QObject::tr("One band: rho = (1 + sqrt(alpha))².")));
  addOutput(
      new QgsProcessingOutputNumber(QStringLiteral("VALID_PIXELS"), QObject::tr("Valid pixels")));
  addOutput(new QgsProcessingOutputNumber(QStringLiteral("MEAN_ALPHA"),
                                          QObject::tr("Mean alpha over valid pixels (rad)")));
}

void SppAlgorithm::prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) {
  options_.window = parameterAsInt(parameters, QStringLiteral("WINDOW"), context);
  options_.border = parameterAsEnum(parameters, QStringLiteral("BORDER"), context) == 1
                        ? SppBorder::Mirror
                        : SppBorder::Truncate;
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

QVariantMap SppAlgorithm::runJob(const QVariantMap& parameters, QgsProcessingContext& context,
                                 QgsProcessingFeedback* feedback) {
  options_.alphaOutput =
      parameterAsOutputLayer(parameters, QStringLiteral("OUTPUT_ALPHA"), context).toStdString();
  options_.rhoOutput =
      parameterAsOutputLayer(parameters, QStringLiteral("OUTPUT_RHO"), context).toStdString();
  ProcessingFeedback engineFeedback(feedback);
  SppResult result;
  runEngineJob([&] { result = runSpp(options_, engineFeedback); });
  QVariantMap outputs;
  if (!options_.alphaOutput.empty())
    outputs.insert(QStringLiteral("OUTPUT_ALPHA"), QString::fromStdString(options_.alphaOutput));
  if (!options_.rhoOutput.empty())
    outputs.insert(QStringLiteral("OUTPUT_RHO"), QString::fromStdString(options_.rhoOutput));
  outputs.insert(QStringLiteral("VALID_PIXELS"), static_cast<double>(result.validPixels));
  outputs.insert(QStringLiteral("MEAN_ALPHA"), result.meanAlpha);
  return outputs;
}

}  // namespace hyperstream
