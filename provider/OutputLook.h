#pragma once
// How an output looks once the dialog loads it: named after what it is and the input it came
// from ("Principal components of scene", made unique in the project) and styled for what it
// holds. QGIS runs a layer's post-processor on the main thread after adding it to the project.

#include <qgsprocessingcontext.h>

#include <QString>
#include <QStringList>

#include <memory>

namespace hyperstream {

enum class OutputStyle {
  AsQgisDoes,         // QGIS's default renderer (components: RGB of the first three, 2-98 % cut)
  Abundances,         // band 1 from 0 to 1 on a colour ramp
  PercentileStretch,  // band 1 in grey between its 2nd and 98th percentiles (SPP's alpha, RMSE)
  LabelledPoints,     // endmember pixels: a marker that stands out, labelled by id
  Scores,             // band 1 on a heat ramp between its 2nd and 99.8th percentiles (detection)
  Classes,            // a class map's colour table, its legend the class names (SAM)
};

class OutputLook : public QgsProcessingLayerPostProcessorInterface {
 public:
  // `classNames`: Classes' labels for classes 1, 2, ..., filled by the run before the layer
  // loads (GDAL's category names live in an .aux.xml beside a GeoTIFF, which the layer's GDAL
  // inside QGIS does not give back).
  OutputLook(QString name, OutputStyle style,
             std::shared_ptr<const QStringList> classNames = nullptr)
      : name_(std::move(name)), style_(style), classNames_(std::move(classNames)) {}
  void postProcessLayer(QgsMapLayer* layer, QgsProcessingContext& context,
                        QgsProcessingFeedback* feedback) override;

 private:
  QString name_;
  OutputStyle style_;
  std::shared_ptr<const QStringList> classNames_;
};

}  // namespace hyperstream
