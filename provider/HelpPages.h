#pragma once
// The pages the dialogs' Help button opens: one HTML page per algorithm, written from the
// algorithm's own definitions (labels, values qgis_process takes, defaults, each parameter's
// help) when the provider is registered, so they say what this machine's dialog shows, and an
// index. The plugin's loader names the folder (beside its private copy of the library).

#include <QString>

class QgsProcessingAlgorithm;
class QgsProcessingProvider;

namespace hyperstream {

QString helpPage(const QgsProcessingAlgorithm& algorithm);
// NAME.html per algorithm and index.html into `folder`; false with `error` when one cannot be
// written.
bool writeHelpPages(const QgsProcessingProvider& provider, const QString& folder, QString* error);

}  // namespace hyperstream
