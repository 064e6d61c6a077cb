#include "OutputLook.h"

#include "QgisCompat.h"

#include <qgscolorramp.h>
#if __has_include(<qgscolorrampimpl.h>)
#include <qgscolorrampimpl.h>  // QgsGradientColorRamp from QGIS 3.24 on
#endif
#include <qgscolorrampshader.h>
#include <qgscontrastenhancement.h>
#include <qgsmarkersymbol.h>
#include <qgspalettedrasterrenderer.h>
#include <qgspallabeling.h>
#include <qgsproject.h>
#include <qgsrasterdataprovider.h>
#include <qgsrasterlayer.h>
#include <qgsrastershader.h>
#include <qgssinglebandgrayrenderer.h>
#include <qgssinglebandpseudocolorrenderer.h>
#include <qgssinglesymbolrenderer.h>
#include <qgsstyle.h>
#include <qgstextbuffersettings.h>
#include <qgstextformat.h>
#include <qgsvectorlayer.h>
#include <qgsvectorlayerlabeling.h>

#include <memory>

namespace hyperstream {

namespace {

// `name`, or "name (2)", "name (3)", ... where another layer of the project has it.
QString uniqueName(const QString& name, const QgsMapLayer& layer) {
  const QgsProject* project = layer.project();
  auto taken = [&](const QString& candidate) {
    if (!project) return false;
    for (const QgsMapLayer* other : project->mapLayersByName(candidate))
      if (other != &layer) return true;
    return false;
  };
  QString unique = name;
  for (int k = 2; taken(unique); ++k) unique = QStringLiteral("%1 (%2)").arg(name).arg(k);
  return unique;
}

// Band 1 from `low` to `high` on the style's ramp `rampName` (else its ends, `first` to `last`).
void styleOnRamp(QgsRasterLayer& layer, double low, double high, const QString& rampName,
                 const QColor& first, const QColor& last) {
  std::unique_ptr<QgsColorRamp> ramp(QgsStyle::defaultStyle()->colorRamp(rampName));
  if (!ramp)  // a profile whose style has none: its ends
    ramp = std::make_unique<QgsGradientColorRamp>(first, last);
  auto colors = std::make_unique<QgsColorRampShader>(low, high);
  QList<QgsColorRampShader::ColorRampItem> items;
  for (int i = 0; i <= 4; ++i) {
    const double value = low + (high - low) * i / 4.0;
    items << QgsColorRampShader::ColorRampItem(value, ramp->color(i / 4.0),
                                               QString::number(value, 'g', 3));
  }
  colors->setColorRampItemList(items);
  colors->setSourceColorRamp(ramp.release());
  auto shader = std::make_unique<QgsRasterShader>(low, high);
  shader->setRasterShaderFunction(colors.release());
  auto* renderer = new QgsSingleBandPseudoColorRenderer(layer.dataProvider(), 1, shader.release());
  renderer->setClassificationMin(low);
  renderer->setClassificationMax(high);
  layer.setRenderer(renderer);
}

void styleAbundances(QgsRasterLayer& layer) {
  styleOnRamp(layer, 0.0, 1.0, QStringLiteral("Viridis"), QColor(68, 1, 84), QColor(253, 231, 37));
}

// Detection scores: most pixels are background, the few high ones are what is looked for.
void styleScores(QgsRasterLayer& layer) {
  double low = 0, high = 0;
  layer.dataProvider()->cumulativeCut(1, 0.02, 0.998, low, high);
  if (!(high > low)) return;
  styleOnRamp(layer, low, high, QStringLiteral("Inferno"), QColor(0, 0, 4), QColor(252, 255, 164));
}

// The colours of the file's colour table for classes 1..n, labelled with their names; class 0
// (no class) is nodata and not drawn.
void styleClasses(QgsRasterLayer& layer, const QStringList& names) {
  QgsRasterDataProvider* provider = layer.dataProvider();
  QgsPalettedRasterRenderer::ClassData drawn;
  // A GeoTIFF's colour table of a UInt16 band has 65536 entries: the classes are those named.
  for (QgsPalettedRasterRenderer::Class& c :
       QgsPalettedRasterRenderer::colorTableToClassData(provider->colorTable(1))) {
    const auto value = static_cast<int>(c.value);
    if (value <= 0 || value > names.size()) continue;
    c.label = names[value - 1];
    drawn << c;
  }
  if (!drawn.isEmpty()) layer.setRenderer(new QgsPalettedRasterRenderer(provider, 1, drawn));
}

void stretchToPercentiles(QgsRasterLayer& layer) {
  QgsRasterDataProvider* provider = layer.dataProvider();
  double low = 0, high = 0;
  provider->cumulativeCut(1, 0.02, 0.98, low, high);
  if (!(high > low)) return;
  auto* renderer = new QgsSingleBandGrayRenderer(provider, 1);
  auto* stretch = new QgsContrastEnhancement(provider->dataType(1));
  stretch->setContrastEnhancementAlgorithm(QgsContrastEnhancement::StretchToMinimumMaximum);
  stretch->setMinimumValue(low);
  stretch->setMaximumValue(high);
  renderer->setContrastEnhancement(stretch);
  layer.setRenderer(renderer);
}

void labelPoints(QgsVectorLayer& layer) {
  QgsMarkerSymbol* marker = compat::released(QgsMarkerSymbol::createSimple(
      {{QStringLiteral("name"), QStringLiteral("circle")},
       {QStringLiteral("color"), QStringLiteral("228,26,28")},
       {QStringLiteral("outline_color"), QStringLiteral("255,255,255")},
       {QStringLiteral("size"), QStringLiteral("3")}}));
  layer.setRenderer(new QgsSingleSymbolRenderer(marker));
  QgsPalLayerSettings labels;
  labels.fieldName = QStringLiteral("id");
  QgsTextFormat format;
  format.setSize(9);
  QgsTextBufferSettings halo;
  halo.setEnabled(true);
  format.setBuffer(halo);
  labels.setFormat(format);
  layer.setLabeling(new QgsVectorLayerSimpleLabeling(labels));
  layer.setLabelsEnabled(true);
}

}  // namespace

void OutputLook::postProcessLayer(QgsMapLayer* layer, QgsProcessingContext&,
                                  QgsProcessingFeedback*) {
  if (!layer) return;
  if (!name_.isEmpty()) layer->setName(uniqueName(name_, *layer));
  auto* raster = qobject_cast<QgsRasterLayer*>(layer);
  auto* vector = qobject_cast<QgsVectorLayer*>(layer);
  if (style_ == OutputStyle::Abundances && raster) styleAbundances(*raster);
  if (style_ == OutputStyle::PercentileStretch && raster) stretchToPercentiles(*raster);
  if (style_ == OutputStyle::LabelledPoints && vector) labelPoints(*vector);
  if (style_ == OutputStyle::Scores && raster) styleScores(*raster);
  if (style_ == OutputStyle::Classes && raster && classNames_) styleClasses(*raster, *classNames_);
  layer->triggerRepaint();
}

}  // namespace hyperstream
