#pragma once
// hyperstream:applytransform and hyperstream:inversetransform: a transform saved by hyperstream:pca
// or hyperstream:mnf (OUTPUT_STATS) applied to another image with the same bands, or inverted (the
// image rebuilt from components written earlier).

#include "EngineAlgorithm.h"
#include "pca/PcaJob.h"

namespace hyperstream {

class ApplyAlgorithm : public JobAlgorithm<ApplyAlgorithm, PcaOptions> {
 public:
  // Forward: applytransform; Inverse: inversetransform.
  enum class Direction { Forward, Inverse };
  explicit ApplyAlgorithm(Direction direction = Direction::Forward)
      : JobAlgorithm(direction == Direction::Inverse ? QStringLiteral("inversetransform")
                                                     : QStringLiteral("applytransform")),
        direction_(direction) {}
  QgsProcessingAlgorithm* createInstance() const override { return new ApplyAlgorithm(direction_); }

 protected:
  // A component raster has no wavelengths or bad-band list to leave bands out by.
  bool readsSpectra() const override { return !inverts(); }
  void addJobParameters() override;
  void prepareJob(const QVariantMap& parameters, QgsProcessingContext& context) override;
  RunReport runJob(OutputFiles& files, QgsProcessingFeedback* feedback) override;

 private:
  bool inverts() const { return direction_ == Direction::Inverse; }
  Direction direction_;
};

}  // namespace hyperstream
