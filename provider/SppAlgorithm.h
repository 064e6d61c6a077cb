#pragma once
// hyperstream:spp, the Processing algorithm around the engine's spatial preprocessing job.

#include "EngineAlgorithm.h"
#include "spp/SppJob.h"

namespace hyperstream {

class SppAlgorithm : public JobAlgorithm<SppAlgorithm, SppOptions> {
 public:
  SppAlgorithm() : JobAlgorithm(QStringLiteral("spp")) {}

 protected:
  void addJobParameters() override;
  void addJobOutputs() override;
  void prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) override;
  bool checkJobParameters(const QVariantMap& parameters, QgsProcessingContext& context,
                          QString* message) const override;
  RunReport runJob(OutputFiles& files, QgsProcessingFeedback* feedback) override;
};

}  // namespace hyperstream
