"""A standalone PyQGIS script (no QGIS window) running Hyperstream's PCA:

    python3 standalone_pca.py INPUT.tif OUTPUT.tif [PLUGINS_FOLDER]

PLUGINS_FOLDER is the folder holding the hyperstream plugin folder: by default the Debian
package's /usr/share/qgis/python/plugins, else the default QGIS profile's python/plugins.
Headless machines need QT_QPA_PLATFORM=offscreen."""
import os
import sys

from qgis.core import QgsApplication

app = QgsApplication([], False)  # False: no GUI
app.initQgis()
system_plugins = os.path.join(QgsApplication.pkgDataPath(), "python", "plugins")
profile_plugins = os.path.expanduser(
    "~/.local/share/QGIS/QGIS3/profiles/default/python/plugins")
if len(sys.argv) > 3:
    plugins = sys.argv[3]
elif os.path.isdir(os.path.join(system_plugins, "hyperstream")):
    plugins = system_plugins
else:
    plugins = profile_plugins
# QGIS's own Python plugins (Processing) and the folder holding hyperstream.
sys.path[:0] = [system_plugins, plugins]

from processing.core.Processing import Processing  # noqa: E402

Processing.initialize()
import hyperstream  # noqa: E402

plugin = hyperstream.classFactory(None)  # no iface outside the desktop
plugin.initProcessing()  # adds the hyperstream:* algorithms to the registry

import processing  # noqa: E402

result = processing.run("hyperstream:pca", {"INPUT": sys.argv[1], "COMPONENTS": 10,
                                            "OUTPUT": sys.argv[2]})
print("%d components, %.2f %% of the variance, on %s" % (
    result["N_COMPONENTS"], result["VARIANCE_EXPLAINED"], result["DEVICE_USED"]))
plugin.unload()
app.exitQgis()
