#pragma once
// hyperstream:spp, the Processing algorithm around the engine's spatial preprocessing job.

#include "EngineAlgorithm.h"
#include "spp/SppJob.h"

namespace hyperstream {

class SppAlgorithm : public EngineAlgorithm {
 public:
  SppAlgorithm();
  SppAlgorithm* createInstance() const override { return new SppAlgorithm(); }

 protected:
  void addJobParameters() override;
  void addJobOutputs() override;
  void prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) override;
  bool checkJobParameters(const QVariantMap& parameters, QgsProcessingContext& context,
                          QString* message) const override;
  QVariantMap runJob(const QVariantMap& parameters, QgsProcessingContext& context,
                     QgsProcessingFeedback* feedback) override;
  JobOptions& jobOptions() override { return options_; }

 private:
  SppOptions options_;
};

}  // namespace hyperstream
