// PCA and MNF components fitted on the image (runPca), or a saved transform's components of
// another image (runApply): the projection on the first components, in Float32, Float64 or Byte
// (each component rescaled from its range, a pass of its own, or the fitting run's ranges).

#include "pca/TransformRun.h"

#include "core/Error.h"
#include "io/QuickLook.h"

#include <QString>

#include <algorithm>
#include <limits>

namespace hyperstream {

namespace {

// "PC1 (42.1 %, cum. 42.1 %)", or "MNF1 (SNR 812.3, cum. 61.0 %)".
QString componentDescription(const PcaModel& model, int k) {
  if (model.transform == Transform::Mnf)
    return QString("MNF%1 (SNR %2, cum. %3 %)")
        .arg(k + 1)
        .arg(model.signal(k), 0, 'f', 1)
        .arg(percentText(model.cumulativePercent(k)));
  return QString("PC%1 (%2 %, cum. %3 %)")
      .arg(k + 1)
      .arg(percentText(model.explainedPercent(k)))
      .arg(percentText(model.cumulativePercent(k)));
}

void checkComponentsOptions(const PcaOptions& options) {
  checkTransformOptions(options);
  const OutputType type = options.outputType;
  if (type != OutputType::Float32 && type != OutputType::Float64 && type != OutputType::Byte)
    throw Error("OUTPUT_TYPE", "components are written as Float32, Float64 or Byte");
}

class ComponentsRun : public TransformRun {
 public:
  ComponentsRun(const PcaOptions& options, const DeviceChoice& device, Feedback& feedback,
                JobGroup& group)
      : TransformRun(options, device, feedback, group) {
    if (!options.savedTransform.empty()) readSavedTransform();
  }

 private:
  BandList inputBands() const override;
  void openImage() override;
  void checkInput() override;
  void checkSavedBands() const;
  void choose() override;
  // Components rescaled to 0-255 from their ranges.
  bool rescalesToByte() const { return result_.outputType == OutputType::Byte; }
  OutputEncoding encode() override;
  void useSavedRanges(OutputEncoding& encoding);
  void setByteRescale(const std::vector<double>& minimum, const std::vector<double>& maximum,
                      OutputEncoding& encoding);
  QString bandDescription(int band) const override {
    return componentDescription(result_.model, band);
  }
  void describeOutput(GDALDataset& dataset, const OutputEncoding& encoding) const override {
    recordFit(dataset, encoding);
  }
  double momentsProgressEnd() const override { return rescalesToByte() ? 40.0 : 50.0; }
  double projectionProgressStart() const override { return rescalesToByte() ? 60.0 : 50.0; }
  ReportViews reportViews() override;
};

// Applying, without BANDS: the bands the transform was fitted on.
BandList ComponentsRun::inputBands() const {
  if (!options_.bands.empty() || !saved_) return options_.bands;
  return {saved_->bands.begin(), saved_->bands.end()};
}

void ComponentsRun::openImage() {
  try {
    CovarianceRun::openImage();
  } catch (const Error& error) {
    // Applying without BANDS reads the bands the transform was fitted on: where the image lacks
    // them, the statistics do not fit it (the user gave no band to blame).
    if (!saved_ || !options_.bands.empty() || error.parameter() != "BANDS") throw;
    throw Error("STATS",
                "the saved transform was fitted on " + std::to_string(saved_->bands.size()) +
                    " bands, up to band " +
                    std::to_string(*std::max_element(saved_->bands.begin(), saved_->bands.end())) +
                    ", which this image lacks (" + error.what() +
                    "): give BANDS to choose the image's bands that match");
  }
}

void ComponentsRun::checkInput() {
  if (saved_) checkSavedBands();
  checkComponentCount();
  result_.outputType = options_.outputType;
}

// Applying: as many bands as the transform was fitted on.
void ComponentsRun::checkSavedBands() const {
  const size_t selected = input_.bands.size();
  if (selected != saved_->bands.size())
    throw Error("BANDS", std::to_string(selected) +
                             " band(s) selected, but the saved transform was fitted on " +
                             std::to_string(saved_->bands.size()));
}

void ComponentsRun::choose() {
  const PcaModel& model = result_.model;
  const int components = chooseComponentCount();
  if (result_.outputType == OutputType::Float32)
    for (int k = 0; k < components; ++k)
      if (model.componentBound(k) > std::numeric_limits<float>::max())
        throw Error("OUTPUT_TYPE",
                    QString("PC%1 can reach %2, beyond what Float32 holds (3.4e38): choose "
                            "Float64")
                        .arg(k + 1)
                        .arg(model.componentBound(k), 0, 'g', 3)
                        .toStdString());
  projection_ = model.projection(components);
}

// Byte: 1-255 and 0 for nodata when some pixels are invalid; the ranges from a pass of their own,
// or (applying) the fitting run's, so that the same values get the same bytes.
OutputEncoding ComponentsRun::encode() {
  if (!rescalesToByte()) return TransformRun::encode();
  const bool someInvalid =
      saved_ ? saved_->hadOutputNodata : result_.model.validPixels < result_.totalPixels;
  OutputEncoding encoding;
  encoding.type = result_.outputType;
  result_.hasOutputNodata = someInvalid;
  encoding.nodata = 0;
  encoding.byteLow = someInvalid ? 1.0 : 0.0;
  if (someInvalid) feedback_.info("Byte output: valid pixels rescaled to 1-255, 0 marks nodata");
  result_.outputNodata = encoding.nodata;
  if (saved_) {
    useSavedRanges(encoding);
  } else {
    const ComponentRange range = rangesPass(momentsProgressEnd(), projectionProgressStart());
    setByteRescale(range.minimum, range.maximum, encoding);
  }
  return encoding;
}

void ComponentsRun::useSavedRanges(OutputEncoding& encoding) {
  if (!saved_->hasByteRanges || result_.components > saved_->components)
    throw Error("OUTPUT_TYPE",
                "Byte output needs the ranges of a fitting run that wrote Byte "
                "components (at least " +
                    std::to_string(result_.components) + "): choose Float32 or Float64");
  const auto components = static_cast<size_t>(result_.components);
  encoding.byteLow = saved_->byteLow;
  setByteRescale({saved_->byteMinimum.begin(), saved_->byteMinimum.begin() + components},
                 {saved_->byteMaximum.begin(), saved_->byteMaximum.begin() + components}, encoding);
}

// Each component rescaled from [minimum, maximum] to [byteLow, 255].
void ComponentsRun::setByteRescale(const std::vector<double>& minimum,
                                   const std::vector<double>& maximum, OutputEncoding& encoding) {
  result_.byteMinimum = minimum;
  result_.byteMaximum = maximum;
  const double span = 255.0 - encoding.byteLow;
  for (size_t k = 0; k < minimum.size(); ++k) {
    const double width = maximum[k] - minimum[k];
    encoding.byteMinimum.push_back(minimum[k]);
    encoding.byteScale.push_back(width > 0 ? span / width : 0.0);
  }
}

// The first three components as red, green and blue (one alone when fewer).
ReportViews ComponentsRun::reportViews() {
  output().dataset().FlushCache();
  ReportViews views;
  views.components =
      makeQuickLook(output().dataset(), projection_.outputCount() >= 3 ? std::vector<int>{1, 2, 3}
                                                                       : std::vector<int>{1});
  return views;
}

const CovarianceJob<PcaOptions, PcaResult> kComponents{
    "PCA", checkComponentsOptions,
    [](const PcaOptions& options, const DeviceChoice& device, Feedback& feedback, JobGroup& group) {
      return ComponentsRun(options, device, feedback, group).run();
    }};

void refuseSavedTransform(const PcaOptions& options) {
  if (!options.savedTransform.empty())
    throw Error("STATS", "a PCA or MNF fits its own transform: a saved one is applied (apply)");
}

}  // namespace

PcaResult runPca(const PcaOptions& options, Feedback& feedback) {
  refuseSavedTransform(options);
  return runOnDevices(kComponents, options, feedback);
}

PcaResult runPca(const PcaOptions& options, Feedback& feedback, JobGroup& group) {
  refuseSavedTransform(options);
  return runInGroup(kComponents, options, feedback, group);
}

PcaResult runApply(const PcaOptions& options, Feedback& feedback) {
  if (options.savedTransform.empty())
    throw Error("STATS", "apply needs the statistics JSON of the fitting run");
  return runOnDevices(kComponents, options, feedback);
}

}  // namespace hyperstream
