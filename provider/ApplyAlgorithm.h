#pragma once
// hyperstream:applytransform: a transform saved by hyperstream:pca or hyperstream:mnf
// (OUTPUT_STATS) applied to another image with the same bands.

#include "EngineAlgorithm.h"
#include "pca/PcaJob.h"

namespace hyperstream {

class ApplyAlgorithm : public JobAlgorithm<ApplyAlgorithm, PcaOptions> {
 public:
  ApplyAlgorithm() : JobAlgorithm(QStringLiteral("applytransform")) {}

 protected:
  void addJobParameters() override;
  void prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) override;
  RunReport runJob(OutputFiles& files, QgsProcessingFeedback* feedback) override;
};

}  // namespace hyperstream
