#pragma once
// hyperstream:spp, the Processing algorithm around the engine's spatial preprocessing job.

#include "EngineAlgorithm.h"
#include "spp/SppJob.h"

namespace hyperstream {

class SppAlgorithm : public EngineAlgorithm {
 public:
  QString name() const override { return QStringLiteral("spp"); }
  QString displayName() const override;
  QString group() const override;
  QString groupId() const override { return QStringLiteral("spectralunmixing"); }
  QString shortHelpString() const override;
  QStringList tags() const override;
  SppAlgorithm* createInstance() const override { return new SppAlgorithm(); }

 protected:
  SharedTexts sharedTexts() const override;
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
