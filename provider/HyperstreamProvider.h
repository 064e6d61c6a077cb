#pragma once
// The Hyperstream Processing provider (id "hyperstream").

#include <qgsprocessingprovider.h>

#include <utility>

namespace hyperstream {

class HyperstreamProvider : public QgsProcessingProvider {
 public:
  // `helpFolder`: where the help pages are (HelpPages.h), which the algorithms' Help opens.
  explicit HyperstreamProvider(QString helpFolder = QString())
      : helpFolder_(std::move(helpFolder)) {}
  QString id() const override { return QStringLiteral("hyperstream"); }
  QString name() const override { return QStringLiteral("Hyperstream"); }
  QString longName() const override;
  QString versionInfo() const override { return QStringLiteral(HYPERSTREAM_VERSION); }
  QIcon icon() const override;
  QString svgIconPath() const override;
  bool canBeActivated() const override { return true; }
  const QString& helpFolder() const { return helpFolder_; }

 protected:
  void loadAlgorithms() override;

 private:
  QString helpFolder_;
};

}  // namespace hyperstream

// Entry points for the Python loader (ctypes): add / remove the provider in QGIS's registry.
// `help_folder` (UTF-8, may be null): where to write the help pages (HelpPages.h).
extern "C" {
int hyperstream_register(const char* help_folder);
void hyperstream_unregister();
}
