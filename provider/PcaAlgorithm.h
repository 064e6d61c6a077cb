#pragma once
// hyperstream:pca, the Processing algorithm around the engine's PCA job.

#include "EngineAlgorithm.h"
#include "pca/PcaJob.h"

namespace hyperstream {

class PcaAlgorithm : public EngineAlgorithm {
 public:
  PcaAlgorithm();
  PcaAlgorithm* createInstance() const override { return new PcaAlgorithm(); }

 protected:
  bool runsOnSeveralGpus() const override { return true; }
  void addJobParameters() override;
  void addJobOutputs() override;
  void prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) override;
  QVariantMap runJob(const QVariantMap& parameters, QgsProcessingContext& context,
                     QgsProcessingFeedback* feedback) override;
  JobOptions& jobOptions() override { return options_; }

 private:
  PcaOptions options_;
};

}  // namespace hyperstream
