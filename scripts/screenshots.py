"""Runs inside the QGIS desktop (qgis --code): grabs the Processing Toolbox with Hyperstream,
the hyperstream:pca dialog and the HTML report, then quits. Driven by scripts/screenshots.sh."""
import os
from qgis.PyQt.QtCore import QTimer
from qgis.PyQt.QtWidgets import QDockWidget, QLineEdit, QApplication
from qgis.utils import iface, plugins

out = os.environ["HYPERSTREAM_SHOTS"]
scene = os.environ["HYPERSTREAM_SCENE"]
report = os.environ["HYPERSTREAM_REPORT"]


def toolbox():
    iface.mainWindow().resize(1400, 900)
    dock = iface.mainWindow().findChild(QDockWidget, "ProcessingToolbox")
    dock.show()
    search = dock.findChild(QLineEdit)
    if search is not None:
        search.setText("hyperstream")
    QTimer.singleShot(1500, lambda: (iface.mainWindow().grab().save(f"{out}/toolbox.png"), dialog()))


def dialog():
    import processing
    layer = iface.addRasterLayer(scene, "demo scene")
    d = processing.createAlgorithmDialog("hyperstream:pca", {"INPUT": layer.id() if layer else scene})
    d.resize(900, 760)
    d.show()
    QTimer.singleShot(1500, lambda: (d.grab().save(f"{out}/dialog.png"), browser(d)))


def browser(d):
    d.close()
    from qgis.PyQt.QtWebKitWidgets import QWebView
    from qgis.PyQt.QtCore import QUrl
    view = QWebView()
    view.resize(900, 1000)
    view.load(QUrl.fromLocalFile(report))
    view.show()
    QTimer.singleShot(2500, lambda: (view.grab().save(f"{out}/report.png"), QApplication.exit(0)))


QTimer.singleShot(4000, toolbox)
