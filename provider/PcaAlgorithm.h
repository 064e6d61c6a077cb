#pragma once
// hyperstream:pca, the Processing algorithm around the engine's PCA job.

#include "EngineAlgorithm.h"
#include "pca/PcaJob.h"

namespace hyperstream {

class PcaAlgorithm : public JobAlgorithm<PcaAlgorithm, PcaOptions> {
 public:
  PcaAlgorithm() : JobAlgorithm(QStringLiteral("pca")) {}

 protected:
  bool runsOnSeveralGpus() const override { return true; }
  void addJobParameters() override;
  void addJobOutputs() override;
  void prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) override;
  RunReport runJob(OutputFiles& files, QgsProcessingFeedback* feedback) override;
};

}  // namespace hyperstream
