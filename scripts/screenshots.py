"""Runs inside the QGIS desktop (qgis --code), driven by scripts/screenshots.sh: grabs the
Processing Toolbox with Hyperstream, each Hyperstream dialog with the demo scene as input, the
Model Designer with each shipped model, and the unmixing chain's outputs as they load (named and
styled by the provider), then quits."""
import glob
import os

from qgis.PyQt.QtCore import QTimer
from qgis.PyQt.QtWidgets import QApplication, QDockWidget, QLineEdit
from qgis.core import QgsApplication
from qgis.utils import iface

out = os.environ["HYPERSTREAM_SHOTS"]
scene = os.environ["HYPERSTREAM_SCENE"]
mixed = os.environ["HYPERSTREAM_MIXED"]
models = sorted(glob.glob(os.path.join(os.environ["HYPERSTREAM_MODELS"], "*.model3")))
steps = []


def next_step():
    if steps:
        steps.pop(0)()
    else:
        QApplication.exit(0)


def grab_later(widget, name, then=None):
    def grab():
        widget.grab().save(os.path.join(out, name))
        if then:
            then()
        next_step()
    QTimer.singleShot(1500, grab)


def toolbox():
    window = iface.mainWindow()
    window.resize(1400, 900)
    iface.addRasterLayer(scene, "demo scene")
    dock = window.findChild(QDockWidget, "ProcessingToolbox")
    dock.show()
    search = dock.findChild(QLineEdit)
    if search is not None:
        search.setText("hyperstream")
    grab_later(window, "toolbox.png")


def dialog(algorithm):
    def show():
        import processing
        layer = iface.activeLayer()
        d = processing.createAlgorithmDialog(algorithm.id(), {"INPUT": layer.id()})
        d.resize(900, 820)
        d.show()
        grab_later(d, "dialog_%s.png" % algorithm.name(), d.close)
    return show


def designer(path):
    def show():
        from processing.modeler.ModelerDialog import ModelerDialog
        from qgis.core import QgsProcessingModelAlgorithm
        model = QgsProcessingModelAlgorithm()
        model.fromFile(path)
        d = ModelerDialog.create(model)
        d.resize(1300, 800)
        d.show()
        d.view().centerOn(d.view().scene().itemsBoundingRect().center())
        name = os.path.splitext(os.path.basename(path))[0]
        grab_later(d, "modeler_%s.png" % name, d.close)
    return show


def styled_outputs():
    """SPP, endmembers, abundances, the endmembers' ACE scores and their SAM classes of the mixed
    scene run as the dialog's Run does (runAndLoadResults loads and post-processes the outputs),
    then the map: the abundances with the endmember pixels on top, SPP's alpha, the first
    endmember's scores and the class map."""
    import processing
    from qgis.core import QgsProject
    work = os.path.dirname(mixed)
    processing.runAndLoadResults("hyperstream:spp", {
        "INPUT": mixed, "OUTPUT": os.path.join(work, "shot_spp.tif"),
        "OUTPUT_ALPHA": os.path.join(work, "shot_alpha.tif")})
    processing.runAndLoadResults("hyperstream:endmembers", {
        "INPUT": mixed, "LOCATIONS": os.path.join(work, "shot_spp.tif"), "METHOD": 1,
        "OUTPUT": os.path.join(work, "shot_em.csv"),
        "OUTPUT_POINTS": os.path.join(work, "shot_em.gpkg")})
    processing.runAndLoadResults("hyperstream:abundances", {
        "INPUT": mixed, "ENDMEMBERS": os.path.join(work, "shot_em.csv"),
        "OUTPUT": os.path.join(work, "shot_ab.tif")})
    processing.runAndLoadResults("hyperstream:detect", {
        "INPUT": mixed, "TARGETS": os.path.join(work, "shot_em.csv"), "METHOD": 1,
        "SIGNAL_SUBSPACE": True,
        "OUTPUT": os.path.join(work, "shot_ace.tif")})
    processing.runAndLoadResults("hyperstream:sam", {
        "INPUT": mixed, "LIBRARY": os.path.join(work, "shot_em.csv"), "MAX_ANGLE": 0.1,
        "OUTPUT": os.path.join(work, "shot_classes.tif"),
        "OUTPUT_ANGLE": os.path.join(work, "shot_angle.tif"),
        "OUTPUT_COUNTS": os.path.join(work, "shot_counts.csv")})
    root = QgsProject.instance().layerTreeRoot()

    def show_only(*names):
        for node in root.findLayers():
            node.setItemVisibilityChecked(node.layer().name() in names)

    show_only("Abundances of mixed", "Endmember pixels of mixed")
    canvas = iface.mapCanvas()
    canvas.setExtent(QgsProject.instance().mapLayersByName("Abundances of mixed")[0].extent())
    canvas.refresh()

    def classes():
        show_only("Classes of mixed", "Endmember pixels of mixed")
        canvas.refresh()
        steps.insert(0, lambda: grab_later(iface.mainWindow(), "styled_classes.png"))

    def scores():
        show_only("Target scores of mixed", "Endmember pixels of mixed")
        canvas.refresh()
        steps.insert(0, lambda: grab_later(iface.mainWindow(), "styled_scores.png", classes))

    def alpha():
        show_only("Alpha (mean neighbour angle) of mixed", "Endmember pixels of mixed")
        canvas.refresh()
        steps.insert(0, lambda: grab_later(iface.mainWindow(), "styled_alpha.png", scores))
    grab_later(iface.mainWindow(), "styled_abundances.png", alpha)


def start():
    steps.append(toolbox)
    provider = QgsApplication.processingRegistry().providerById("hyperstream")
    for algorithm in sorted(provider.algorithms(), key=lambda a: a.name()):
        steps.append(dialog(algorithm))
    for path in models:
        steps.append(designer(path))
    steps.append(styled_outputs)
    next_step()


QTimer.singleShot(4000, start)
