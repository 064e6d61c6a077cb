"""Runs inside the QGIS desktop (qgis --code), driven by tests/test_qgis_desktop.sh: what a user
does with the mouse, through the same code. Runs hyperstream:pca, hyperstream:spp and the unmixing
chain after it (hyperstream:endmembers searching the SPP output, hyperstream:abundances) from their
Processing dialogs (a background task each, results loaded by the dialog; the chain's inputs
picked from the layer list among the layers the steps before loaded), then reinstalls the
plugin from a ZIP while it is loaded (Plugin Manager, "Install from ZIP") and runs PCA again.
Writes one line per step to $HYPERSTREAM_DESKTOP_RESULTS and quits; a crash writes nothing more."""
import os
import traceback

from qgis.PyQt.QtCore import QTimer
from qgis.PyQt.QtWidgets import QApplication
from qgis.core import QgsApplication, QgsProject
from qgis.utils import iface

work = os.environ["HYPERSTREAM_DESKTOP_WORK"]
results = open(os.environ["HYPERSTREAM_DESKTOP_RESULTS"], "w", buffering=1)
scene = os.path.join(work, "scene.tif")


def say(line):
    results.write(line + "\n")


def loaded_sources():
    return sorted(layer.source() for layer in QgsProject.instance().mapLayers().values())


def when(condition, then, seconds=120):
    """Calls then() once condition() holds, polling the event loop; fails after `seconds`."""
    waited = [0]

    def poll():
        if condition():
            then()
        elif waited[0] > seconds * 10:
            say("FAIL timed out waiting: loaded %s" % loaded_sources())
            QApplication.exit(1)
        else:
            waited[0] += 1
            QTimer.singleShot(100, poll)
    poll()


def layer_of(path):
    """The loaded layer whose source is `path` (or a layer inside it)."""
    for layer in QgsProject.instance().mapLayers().values():
        if layer.source() == path or layer.source().startswith(path + "|"):
            return layer
    raise AssertionError("no layer of %s among %s" % (path, loaded_sources()))


def pick(dialog, name, layer):
    """Chooses `layer` in the parameter's layer box, as a click in its list of loaded layers
    does."""
    from qgis.gui import QgsProcessingMapLayerComboBox
    widget = dialog.mainWidget().wrappers[name].wrappedWidget()
    if widget is not None and not isinstance(widget, QgsProcessingMapLayerComboBox) and \
            widget.metaObject().className() == "QgsProcessingMapLayerComboBox":
        from qgis.PyQt import sip
        widget = sip.cast(widget, QgsProcessingMapLayerComboBox)
    widget.setLayer(layer)
    chosen = widget.currentLayer()
    if chosen is None or chosen.id() != layer.id():
        raise AssertionError("%s does not offer the layer %s" % (name, layer.name()))
    say("ok %s picked from the layer list: %s" % (name, layer.name()))


def run_dialog(algorithm, parameters, outputs, then, check_dialog=None, picks=None):
    """Runs the dialog; `outputs` are the files whose layers must load (a layer's source may
    name a layer inside the file: em.gpkg|layername=endmembers). `picks` maps parameters to the
    loaded layers chosen in their boxes. check_dialog(dialog) looks at the dialog before Run."""
    import processing
    dialog = processing.createAlgorithmDialog(algorithm, parameters)
    dialog.show()
    for name, layer in (picks or {}).items():
        pick(dialog, name, layer)
    if check_dialog:
        check_dialog(dialog)
    dialog.runAlgorithm()  # the Run button: a QgsProcessingAlgRunnerTask on the task manager

    def done():
        say("ok %s dialog loaded %s" % (algorithm, ", ".join(os.path.basename(o) for o in outputs)))
        dialog.close()
        then()

    def loaded(path):
        return any(source == path or source.startswith(path + "|") for source in loaded_sources())
    when(lambda: all(loaded(o) for o in outputs), done)


def pca_dialog():
    if not QgsApplication.processingRegistry().providerById("hyperstream"):
        say("FAIL the provider is not registered")
        QApplication.exit(1)
        return
    out = os.path.join(work, "pcs.tif")
    run_dialog("hyperstream:pca", {"INPUT": scene, "COMPONENTS": 3, "OUTPUT": out,
                                   "CREATION_OPTIONS": "COMPRESS=DEFLATE|ZLEVEL=9"}, [out],
               lambda: check_compressed(out) and spp_dialog(), check_pca_dialog)


def check_pca_dialog(dialog):
    """CREATION_OPTIONS is edited with GDAL's own widget (profiles, a table, Validate); Help
    opens the algorithm's page."""
    from qgis.PyQt.QtCore import QUrl
    from qgis.gui import QgsRasterFormatSaveOptionsWidget
    page = QUrl(dialog.algorithm().helpUrl()).toLocalFile()
    if not page or "Principal component analysis" not in open(page, encoding="utf-8").read():
        raise AssertionError("no help page: %r" % dialog.algorithm().helpUrl())
    say("ok Help opens %s" % os.path.basename(page))
    wrapper = dialog.mainWidget().wrappers["CREATION_OPTIONS"]
    # The GDAL provider's Python wrapper (3.22) keeps its widget in .widget; QGIS's C++
    # rasteroptions wrapper (3.36 and later) gives it by wrappedWidget().
    widget = getattr(wrapper, "widget", None)
    if widget is None and hasattr(wrapper, "wrappedWidget"):
        widget = wrapper.wrappedWidget()
        # sip gives it to Python as a plain QWidget: cast it by what Qt says it is.
        if widget is not None and \
                widget.metaObject().className() == "QgsRasterFormatSaveOptionsWidget":
            from qgis.PyQt import sip
            widget = sip.cast(widget, QgsRasterFormatSaveOptionsWidget)
    if not isinstance(widget, QgsRasterFormatSaveOptionsWidget):
        raise AssertionError("CREATION_OPTIONS widget is a %s" % type(widget).__name__)
    say("ok CREATION_OPTIONS uses GDAL's options widget: %s" % " ".join(widget.options()))


def check_compressed(path):
    from osgeo import gdal
    compression = gdal.Info(path, format="json")["metadata"]["IMAGE_STRUCTURE"].get("COMPRESSION")
    if compression != "DEFLATE":
        say("FAIL the dialog's creation options did not reach the file: %s" % compression)
        QApplication.exit(1)
        return False
    say("ok the dialog's creation options reached the file (DEFLATE)")
    return True


# The unmixing chain as an analyst runs it: the scene loaded, then each step's inputs picked
# from the layer list among the layers the previous steps loaded.
def spp_dialog():
    from qgis.core import QgsRasterLayer
    QgsProject.instance().addMapLayer(QgsRasterLayer(scene, "scene"))
    outputs = [os.path.join(work, "spp.tif"), os.path.join(work, "alpha.tif")]
    run_dialog("hyperstream:spp", {"WINDOW": 3, "OUTPUT": outputs[0], "OUTPUT_ALPHA": outputs[1]},
               outputs, endmembers_dialog, picks={"INPUT": layer_of(scene)})


def endmembers_dialog():
    points, table = os.path.join(work, "em.gpkg"), os.path.join(work, "em.csv")
    run_dialog("hyperstream:endmembers",
               {"COUNT": 4, "METHOD": 1, "OUTPUT": table, "OUTPUT_POINTS": points},
               [points, table], abundances_dialog,
               picks={"INPUT": layer_of(scene),
                      "LOCATIONS": layer_of(os.path.join(work, "spp.tif"))})


def abundances_dialog():
    out = os.path.join(work, "abundances.tif")
    run_dialog("hyperstream:abundances", {"OUTPUT": out}, [out], reinstall,
               picks={"INPUT": layer_of(scene),
                      "ENDMEMBERS": layer_of(os.path.join(work, "em.csv"))})


def reinstall():
    iface.mainWindow().grab().save(os.path.join(work, "desktop.png"))
    import pyplugin_installer
    pyplugin_installer.instance().installFromZipFile(os.path.join(work, "hyperstream.zip"))
    say("ok reinstalled from a ZIP while loaded")
    QTimer.singleShot(500, run_after_reinstall)


def run_after_reinstall():
    import processing
    out = os.path.join(work, "after.tif")
    result = processing.run("hyperstream:pca", {"INPUT": scene, "COMPONENTS": 2, "OUTPUT": out})
    say("ok pca after the reinstall: %d components" % result["N_COMPONENTS"])
    say("done")
    QApplication.exit(0)


def start():
    try:
        pca_dialog()
    except Exception:
        say("FAIL " + traceback.format_exc().replace("\n", " | "))
        QApplication.exit(1)


QTimer.singleShot(3000, start)
