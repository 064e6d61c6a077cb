#include "detect/WindowComponents.h"

#include "core/Error.h"

namespace hyperstream {

namespace {

struct WindowComponentsOptions : CovarianceOptions {
  int components = 0;
};

class WindowComponentsRun : public CovarianceRun {
 public:
  WindowComponentsRun(const WindowComponentsOptions& options, const DeviceChoice& device,
                      Feedback& feedback, JobGroup& group)
      : CovarianceRun(options, device, feedback, group), asked_(options.components) {}
  CovarianceResult run() { return runSteps(); }

 private:
  void checkInput() override {
    const auto selected = static_cast<int>(input_.bands.size());
    if (asked_ > selected)
      throw Error("COMPONENTS", "asks for " + std::to_string(asked_) + " components, but only " +
                                    std::to_string(selected) + " bands are selected");
    result_.outputType = OutputType::Float64;
  }
  PcaModel fitModel(const Moments& moments, const Moments& /*noise*/) override {
    return fitPca(moments, MatrixType::Covariance, result_.warnings);
  }
  bool needsSubspace() const override { return asked_ == kSignalSubspace; }
  bool countsMaterials() const override { return asked_ == kSceneMaterials; }
  void choose() override {
    const int available = result_.model.componentCount();
    if (asked_ > available)
      throw Error("COMPONENTS", "asks for " + std::to_string(asked_) +
                                    " components, but there are only " + std::to_string(available) +
                                    " (non-constant selected bands)");
    result_.components = countedComponents(asked_);
    projection_ = result_.model.projection(result_.components);
  }
  OutputEncoding encode() override {
    OutputEncoding encoding;
    encoding.type = result_.outputType;
    setPlainNodata(encoding, input_.nodata, result_.model.validPixels < result_.totalPixels);
    return encoding;
  }
  QString bandDescription(int band) const override { return QString("PC%1").arg(band + 1); }
  void writeReports() override {}

  int asked_;
};

void checkComponents(const WindowComponentsOptions& options) {
  checkCovarianceOptions(options);
}

const CovarianceJob<WindowComponentsOptions, CovarianceResult> kWindowComponents{
    "PCA", checkComponents,
    [](const WindowComponentsOptions& options, const DeviceChoice& device, Feedback& feedback,
       JobGroup& group) { return WindowComponentsRun(options, device, feedback, group).run(); }};

}  // namespace

CovarianceResult writeWindowComponents(const CovarianceOptions& options, int components,
                                       Feedback& feedback) {
  WindowComponentsOptions mine;
  static_cast<CovarianceOptions&>(mine) = options;
  mine.format = "GTiff";
  mine.creationOptions = {};
  mine.outputType = OutputType::Float64;
  mine.orthorectify = false;
  mine.components = components;
  return runOnDevices(kWindowComponents, mine, feedback);
}

}  // namespace hyperstream
