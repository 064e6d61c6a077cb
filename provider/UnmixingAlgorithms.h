#pragma once
// hyperstream:endmembers and hyperstream:abundances, the Processing algorithms around the
// engine's unmixing jobs (after hyperstream:spp in the chain).

#include "EngineAlgorithm.h"
#include "unmixing/AbundanceJob.h"
#include "unmixing/EndmemberJob.h"

namespace hyperstream {

class EndmembersAlgorithm : public JobAlgorithm<EndmembersAlgorithm, EndmemberOptions> {
 public:
  EndmembersAlgorithm() : JobAlgorithm(QStringLiteral("endmembers")) {}

 protected:
  void addJobParameters() override;
  void addJobOutputs() override;
  QgsProcessingDestinationParameter* createMainOutput(const QString& label) const override;
  std::string resolveOutput(OutputFiles& files) override;
  void prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) override;
  bool checkJobParameters(const QVariantMap& parameters, QgsProcessingContext& context,
                          QString* message) const override;
  RunReport runJob(OutputFiles& files, QgsProcessingFeedback* feedback) override;
};

class AbundancesAlgorithm : public JobAlgorithm<AbundancesAlgorithm, AbundanceOptions> {
 public:
  AbundancesAlgorithm() : JobAlgorithm(QStringLiteral("abundances")) {}

 protected:
  bool runsOnSeveralGpus() const override { return true; }
  void addJobParameters() override;
  std::string resolveOutput(OutputFiles& files) override;
  void addJobOutputs() override;
  void prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) override;
  RunReport runJob(OutputFiles& files, QgsProcessingFeedback* feedback) override;
};

}  // namespace hyperstream
