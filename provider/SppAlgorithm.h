#pragma once
// hyperstream:spp, the Processing algorithm around the engine's spatial preprocessing job.

#include "spp/SppJob.h"

#include <qgsprocessingalgorithm.h>

namespace hyperstream {

class SppAlgorithm : public QgsProcessingAlgorithm {
 public:
  QString name() const override { return QStringLiteral("spp"); }
  QString displayName() const override;
  QString group() const override;
  QString groupId() const override { return QStringLiteral("spectralunmixing"); }
  QString shortHelpString() const override;
  QStringList tags() const override;
  QIcon icon() const override;
  void initAlgorithm(const QVariantMap& configuration = QVariantMap()) override;
  SppAlgorithm* createInstance() const override { return new SppAlgorithm(); }

 protected:
  bool prepareAlgorithm(const QVariantMap& parameters, QgsProcessingContext& context,
                        QgsProcessingFeedback* feedback) override;
  bool checkParameterValues(const QVariantMap& parameters, QgsProcessingContext& context,
                            QString* message = nullptr) const override;
  QVariantMap processAlgorithm(const QVariantMap& parameters, QgsProcessingContext& context,
                               QgsProcessingFeedback* feedback) override;

 private:
  SppOptions options_;
};

}  // namespace hyperstream
