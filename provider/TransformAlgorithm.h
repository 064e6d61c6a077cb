#pragma once
// hyperstream:pca and hyperstream:mnf, the Processing algorithms around the engine's transform
// job (MNF is a PCA of the noise-whitened image; the two share everything but the fit's options).

#include "EngineAlgorithm.h"
#include "pca/PcaJob.h"

namespace hyperstream {

class TransformAlgorithm : public JobAlgorithm<TransformAlgorithm, PcaOptions> {
 public:
  explicit TransformAlgorithm(Transform transform = Transform::Pca);
  QgsProcessingAlgorithm* createInstance() const override {
    return new TransformAlgorithm(transform_);
  }

 protected:
  bool runsOnSeveralGpus() const override { return true; }
  void addJobParameters() override;
  void addJobOutputs() override;
  void prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) override;
  RunReport runJob(OutputFiles& files, QgsProcessingFeedback* feedback) override;

 private:
  Transform transform_;
};

}  // namespace hyperstream
