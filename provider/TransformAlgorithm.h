#pragma once
// hyperstream:pca, hyperstream:mnf and hyperstream:denoise, the Processing algorithms around the
// engine's transform job (MNF is a PCA of the noise-whitened image; the two share everything but
// the fit's options). Denoising fits either and writes the image rebuilt from its first components.

#include "EngineAlgorithm.h"
#include "pca/PcaJob.h"

namespace hyperstream {

class TransformAlgorithm : public JobAlgorithm<TransformAlgorithm, PcaOptions> {
 public:
  enum class Writes { PcaComponents, MnfComponents, Denoised };
  explicit TransformAlgorithm(Writes writes = Writes::PcaComponents);
  QgsProcessingAlgorithm* createInstance() const override {
    return new TransformAlgorithm(writes_);
  }

 protected:
  bool runsOnSeveralGpus() const override { return true; }
  void addJobParameters() override;
  void addJobOutputs() override;
  void prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) override;
  RunReport runJob(OutputFiles& files, QgsProcessingFeedback* feedback) override;

 private:
  bool offersPca() const { return writes_ != Writes::MnfComponents; }
  bool offersMnf() const { return writes_ != Writes::PcaComponents; }
  void readMnfOptions(const QVariantMap& parameters, QgsProcessingContext& context);

  Writes writes_;
};

}  // namespace hyperstream
