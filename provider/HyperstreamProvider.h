#pragma once
// The Hyperstream Processing provider (id "hyperstream").

#include <qgsprocessingprovider.h>

namespace hyperstream {

class HyperstreamProvider : public QgsProcessingProvider {
 public:
  QString id() const override { return QStringLiteral("hyperstream"); }
  QString name() const override { return QStringLiteral("Hyperstream"); }
  QString longName() const override;
  QString versionInfo() const override { return QStringLiteral(HYPERSTREAM_VERSION); }
  QIcon icon() const override;
  bool canBeActivated() const override { return true; }

 protected:
  void loadAlgorithms() override;
};

}  // namespace hyperstream

// Entry points for the Python loader (ctypes): add / remove the provider in QGIS's registry.
extern "C" {
int hyperstream_register();
void hyperstream_unregister();
}
