#pragma once
// hyperstream:pca, the Processing algorithm around the engine's PCA job.

#include "pca/PcaJob.h"

#include <qgsprocessingalgorithm.h>

namespace hyperstream {

class PcaAlgorithm : public QgsProcessingAlgorithm {
 public:
  QString name() const override { return QStringLiteral("pca"); }
  QString displayName() const override;
  QString group() const override;
  QString groupId() const override { return QStringLiteral("dimensionalityreduction"); }
  QString shortHelpString() const override;
  QStringList tags() const override;
  QIcon icon() const override;
  void initAlgorithm(const QVariantMap& configuration = QVariantMap()) override;
  PcaAlgorithm* createInstance() const override { return new PcaAlgorithm(); }

 protected:
  // Main thread: resolve the layer to plain data the worker thread can use.
  bool prepareAlgorithm(const QVariantMap& parameters, QgsProcessingContext& context,
                        QgsProcessingFeedback* feedback) override;
  // Before the run: what the engine would refuse only after reading the input.
  bool checkParameterValues(const QVariantMap& parameters, QgsProcessingContext& context,
                            QString* message = nullptr) const override;
  // Worker thread: resolves the outputs, then only the engine and plain data.
  QVariantMap processAlgorithm(const QVariantMap& parameters, QgsProcessingContext& context,
                               QgsProcessingFeedback* feedback) override;

 private:
  PcaOptions options_;
};

}  // namespace hyperstream
