#pragma once
// What the transform family's runs share over the covariance skeleton: the PCA or MNF fit, the
// saved transform of apply and inverse, the component count, the output's nodata and the
// reports. ComponentsRun (pca/ComponentsRun.cpp) writes components (pca, mnf, apply); DenoiseRun
// and InverseRun (pca/RebuildRuns.cpp) write the image rebuilt from them.

#include "covariance/CovarianceRun.h"
#include "pca/HtmlReport.h"
#include "pca/PcaJob.h"
#include "pca/SavedTransform.h"

#include <optional>

namespace hyperstream {

class TransformRun : public CovarianceRun {
 public:
  TransformRun(const PcaOptions& options, const DeviceChoice& device, Feedback& feedback,
               JobGroup& group);
  PcaResult run();

 protected:
  // Apply and inverse: the saved transform, read before the input.
  void readSavedTransform();
  std::vector<InputFile> otherInputs() const override;
  std::optional<NoiseDirection> noise() const override { return pca_.noise; }
  const PcaModel* givenModel() const override { return saved_ ? &saved_->model : nullptr; }
  PcaModel fitModel(const Moments& moments, const Moments& noise) override;
  bool needsSubspace() const override { return pca_.components == kSignalSubspace; }
  bool countsMaterials() const override { return pca_.components == kSceneMaterials; }
  OutputEncoding encode() override;
  void writeReports() override;

  // A count beyond the selected bands, refused before the first pass reads the image.
  void checkComponentCount() const;
  // How many components to write (or rebuild from), logged with the share they explain.
  int chooseComponentCount();
  // The first declared nodata value of these is the output's.
  virtual const std::vector<double>& fittedNodata() const { return input_.nodata; }
  // The report's previews of the images.
  virtual ReportViews reportViews() = 0;
  // Components say which fit wrote them and how they were rescaled to Byte, so that inverting
  // them with the statistics of another fit is refused (checkComponentsBelong).
  void recordFit(GDALDataset& dataset, const OutputEncoding& encoding) const;
  void checkComponentsBelong();

  const PcaOptions& pca_;
  std::optional<SavedTransform> saved_;

 private:
  int countComponents() const;
};

// The options' checks of every transform run.
void checkTransformOptions(const PcaOptions& options);

}  // namespace hyperstream
