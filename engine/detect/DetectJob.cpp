#include "detect/DetectJob.h"

#include "core/Error.h"
#include "covariance/FitStatistics.h"
#include "detect/DetectReport.h"
#include "spectra/SpectralLibrary.h"

#include <QObject>

#include <algorithm>

namespace hyperstream {

namespace {

void checkDetectOptions(const DetectOptions& options) {
  checkCovarianceOptions(options);
  const OutputType type = options.outputType;
  if (type != OutputType::Float32 && type != OutputType::Float64)
    throw Error("OUTPUT_TYPE", "detection scores are written as Float32 or Float64");
  const int components = options.detector.components;
  if (components < 0 && components != kSignalSubspace && components != kSceneMaterials)
    throw Error("COMPONENTS", "the number of components must be positive (0: all), or auto");
  const double shrinkage = options.detector.shrinkage.value_or(0.0);
  if (!(shrinkage >= 0 && shrinkage < 1))
    throw Error("SHRINKAGE", "the shrinkage is a share of the mean band variance, in [0, 1)");
}

// The covariance's PCA fit, and the detector's projection of it.
class DetectRun : public CovarianceRun {
 public:
  DetectRun(const DetectOptions& options, const DeviceChoice& device, Feedback& feedback,
            JobGroup& group)
      : CovarianceRun(options, device, feedback, group), detect_(options) {}

  DetectResult run() {
    DetectResult result;
    static_cast<CovarianceResult&>(result) = runSteps();
    result.detector = *detector_;
    return result;
  }

 private:
  std::vector<InputFile> otherInputs() const override { return detect_.targetTable.files; }
  // ACE projects the whitened bands and a filter per target.
  int extraProjections() const override {
    return static_cast<int>(detect_.targetTable.targets.size());
  }
  PcaModel fitModel(const Moments& moments, const Moments& /*noise*/) override {
    return fitPca(moments, MatrixType::Covariance, result_.warnings);
  }
  bool countsMaterials() const override { return detect_.detector.components == kSceneMaterials; }
  void choose() override;
  OutputEncoding encode() override {
    OutputEncoding encoding;
    encoding.type = result_.outputType;
    setPlainNodata(encoding, input_.nodata, result_.model.validPixels < result_.totalPixels);
    return encoding;
  }
  QString bandDescription(int band) const override {
    return QString::fromStdString(detector_->bandNames[band]);
  }
  void writeReports() override;
  DetectionPage detectionPage() const;

  const DetectOptions& detect_;
  std::optional<Detector> detector_;
};

void DetectRun::choose() {
  DetectorOptions chosen = detect_.detector;
  // Each band's column by its name in the table, or (a table whose columns name no band of the
  // image, or are not named) the columns in order, one per selected band.
  chosen.targets = targetsForImage(detect_.targetTable, result_.input, result_.bands);
  if (chosen.components == kSignalSubspace) {
    if (!result_.subspace)
      throw Error("COMPONENTS", "no signal subspace estimate to score in (see the warning above)");
    chosen.components = std::max(1, result_.subspace->dimension);
  }
  if (chosen.components == kSceneMaterials) chosen.components = result_.materials->count;
  const Detector& detector = detector_.emplace(fitDetector(result_.model, chosen));
  result_.components = detector.components;
  projection_ = detector.projection;
  const PcaModel& model = result_.model;
  const int asked = detect_.detector.components;
  const QString why = asked == kSceneMaterials ? QString(", as many as the scene's materials")
                      : asked == kSignalSubspace
                          ? QString(", as many as the signal subspace's dimensions (HySime)")
                          : QString();
  feedback_.info(QString("%1 valid of %2 pixels; %3 over %4 of %5 principal component(s)%8 "
                         "(%6 % of the variance), shrinkage %7")
                     .arg(model.validPixels)
                     .arg(result_.totalPixels)
                     .arg(QString::fromStdString(detectMethodName(chosen.method)).toUpper())
                     .arg(detector.components)
                     .arg(model.componentCount())
                     .arg(percentText(model.cumulativePercent(detector.components - 1)))
                     .arg(detector.epsilon > 0 ? QString("ε = %1").arg(detector.epsilon, 0, 'g', 4)
                                               : QString("none"))
                     .arg(why));
}

void DetectRun::writeReports() {
  if (!detect_.statsJson.empty()) writeStatsJson(result_, detect_, detect_.statsJson);
  if (!detect_.tableCsv.empty()) writeTableCsv(result_, detect_.tableCsv);
  if (!detect_.htmlReport.empty())
    writeDetectionReport(detectionPage(), output().dataset(), detect_.htmlReport);
}

// The detector, its statistics and targets.
DetectionPage DetectRun::detectionPage() const {
  const Detector& detector = *detector_;
  DetectionPage page;
  page.heading = detectorTitle(detect_.detector.method);
  page.input = result_.input;
  page.bands = result_.bands;
  page.validPixels = result_.model.validPixels;
  page.facts = {
      {QObject::tr("Output"), QString::fromStdString(detect_.output)},
      {QObject::tr("Statistics"),
       QObject::tr("the image's mean and covariance, in %1 principal component(s)%2")
           .arg(detector.components)
           .arg(detector.epsilon > 0 ? QObject::tr("; C + εI, ε = %1").arg(detector.epsilon)
                                     : QString())},
      {QObject::tr("Device"), QString::fromStdString(result_.backend)},
      {QObject::tr("Seconds"), QString::number(elapsedSeconds(), 'f', 2)}};
  if (detect_.detector.method != DetectMethod::Rx) {
    page.targets = targetsForImage(detect_.targetTable, result_.input, result_.bands);
    page.absorption = detect_.detector.absorption;
    page.mean = result_.model.mean;
  }
  return page;
}

const CovarianceJob<DetectOptions, DetectResult> kDetection{
    "PCA", checkDetectOptions,
    [](const DetectOptions& options, const DeviceChoice& device, Feedback& feedback,
       JobGroup& group) { return DetectRun(options, device, feedback, group).run(); }};

}  // namespace

DetectResult runDetection(const DetectOptions& options, Feedback& feedback) {
  return runOnDevices(kDetection, options, feedback);
}

DetectResult runDetection(const DetectOptions& options, Feedback& feedback, JobGroup& group) {
  return runInGroup(kDetection, options, feedback, group);
}

}  // namespace hyperstream
