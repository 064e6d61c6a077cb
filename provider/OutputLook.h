#pragma once
// How an output looks once the dialog loads it: named after what it is and the input it came
// from ("Principal components of scene", made unique in the project) and styled for what it
// holds. QGIS runs a layer's post-processor on the main thread after adding it to the project.

#include <qgsprocessingcontext.h>

#include <QString>

namespace hyperstream {

enum class OutputStyle {
  AsQgisDoes,         // QGIS's default renderer (components: RGB of the first three, 2-98 % cut)
  Abundances,         // band 1 from 0 to 1 on a colour ramp
  PercentileStretch,  // band 1 in grey between its 2nd and 98th percentiles (SPP's alpha, RMSE)
  LabelledPoints,     // endmember pixels: a marker that stands out, labelled by id
  Scores,             // band 1 on a heat ramp between its 2nd and 99.8th percentiles (detection)
};

class OutputLook : public QgsProcessingLayerPostProcessorInterface {
 public:
  OutputLook(QString name, OutputStyle style) : name_(std::move(name)), style_(style) {}
  void postProcessLayer(QgsMapLayer* layer, QgsProcessingContext& context,
                        QgsProcessingFeedback* feedback) override;

 private:
  QString name_;
  OutputStyle style_;
};

}  // namespace hyperstream
