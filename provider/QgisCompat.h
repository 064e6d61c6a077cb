#pragma once
// What differs between the QGIS versions the provider builds against (3.22 to 3.44), in one
// place: QGIS 3.36 moved the Processing enums into Qgis:: and dropped their old names, and gave
// Processing a creation-options widget of its own; 3.44 returns new symbols as std::unique_ptr.

#include <qgis.h>
#include <qgsconfig.h>
#include <qgsprocessingparameters.h>

#include <QVariantMap>

#include <memory>

namespace hyperstream::compat {

#if _QGIS_VERSION_INT >= 33600
constexpr auto kInteger = Qgis::ProcessingNumberParameterType::Integer;
constexpr auto kDouble = Qgis::ProcessingNumberParameterType::Double;
constexpr auto kFile = Qgis::ProcessingFileParameterBehavior::File;
constexpr auto kAdvanced = Qgis::ProcessingParameterFlag::Advanced;
constexpr auto kOptional = Qgis::ProcessingParameterFlag::Optional;
constexpr auto kVectorPoint = Qgis::ProcessingSourceType::VectorPoint;
constexpr auto kVectorOrTable = Qgis::ProcessingSourceType::Vector;  // tables without geometry too
#else
constexpr auto kInteger = QgsProcessingParameterNumber::Integer;
constexpr auto kDouble = QgsProcessingParameterNumber::Double;
constexpr auto kFile = QgsProcessingParameterFile::File;
constexpr auto kAdvanced = QgsProcessingParameterDefinition::FlagAdvanced;
constexpr auto kOptional = QgsProcessingParameterDefinition::FlagOptional;
constexpr auto kVectorPoint = QgsProcessing::TypeVectorPoint;
constexpr auto kVectorOrTable = QgsProcessing::TypeVector;  // tables without geometry too
#endif

// The metadata that gives a text parameter GDAL's creation-options editor (profiles, a table,
// Validate): QGIS's own `rasteroptions` widget type from 3.36 on; before, the GDAL provider's
// Python wrapper by class name (3.22 has no C++ type, and its Python dialog builds a wrapper
// from a class name before it asks the C++ registry).
inline QVariantMap creationOptionsWidget() {
#if _QGIS_VERSION_INT >= 33600
  return {{QStringLiteral("widget_wrapper"),
           QVariantMap({{QStringLiteral("widget_type"), QStringLiteral("rasteroptions")}})}};
#else
  return {{QStringLiteral("widget_wrapper"),
           QVariantMap({{QStringLiteral("class"),
                         QStringLiteral("processing.algs.gdal.ui.RasterOptionsWidget."
                                        "RasterOptionsWidgetWrapper")}})}};
#endif
}

// A new symbol (QgsMarkerSymbol::createSimple ...) for a renderer to own: QGIS 3.44 returns it as a
// std::unique_ptr, earlier versions as a pointer.
template <class Symbol>
Symbol* released(std::unique_ptr<Symbol> symbol) {
  return symbol.release();
}
template <class Symbol>
Symbol* released(Symbol* symbol) {
  return symbol;
}

}  // namespace hyperstream::compat
