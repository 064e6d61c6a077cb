"""Hyperstream QGIS plugin: loads the C++ Processing provider library and registers it.

qgis_process only loads Python plugins, so this small loader opens libhyperstream_qgis.so with
ctypes and calls its extern "C" entry points, which add the provider to QGIS's registry.

The library is loaded from a private copy of the plugin's libraries: QGIS's "Install from ZIP"
rewrites the plugin's files in place, and rewriting a library that is mapped crashes QGIS.
"""
import ctypes
import json
import os
import re
import shutil
import sys
import tempfile

_PROVIDER = "libhyperstream_qgis.so"
_LIBRARIES = (_PROVIDER, "libhyperstream_cuda.so")  # the engine finds the CUDA one beside itself


def _build():
    """What the build records of itself (build.json, written when the library was linked): the
    system and QGIS it was built on, and the package of each library it links."""
    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "build.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}

_library = None


def _cache_folder():
    try:
        from qgis.core import QgsApplication
        base = QgsApplication.qgisSettingsDirPath()
    except ImportError:
        base = ""
    if not base:
        base = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    return os.path.join(base, "cache", "hyperstream")


def _private_copy():
    """The provider library's path in a folder of copies named after the plugin's build, made
    once per build; copies of other builds are removed (a process that still maps one keeps it)."""
    here = os.path.dirname(os.path.abspath(__file__))
    stat = os.stat(os.path.join(here, _PROVIDER))
    cache = _cache_folder()
    folder = os.path.join(cache, "%d-%d" % (stat.st_size, stat.st_mtime_ns))
    if not os.path.isfile(os.path.join(folder, _PROVIDER)):
        os.makedirs(cache, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".copy-", dir=cache)
        for name in _LIBRARIES:
            if os.path.isfile(os.path.join(here, name)):
                shutil.copy2(os.path.join(here, name), staging)
        try:
            os.rename(staging, folder)  # complete or not there: another QGIS may do the same
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
    for name in os.listdir(cache):
        if os.path.join(cache, name) != folder and not name.startswith(".copy-"):
            shutil.rmtree(os.path.join(cache, name), ignore_errors=True)
    return os.path.join(folder, _PROVIDER)


def _why(error):
    """What the system said, and what to install when a library is missing."""
    reason = str(error)
    missing = re.search(r"(lib[\w+.-]+?\.so[\w.]*): cannot open shared object file", reason)
    if not missing:
        return "Hyperstream's provider library cannot be loaded: %s" % reason
    name = missing.group(1)
    build = _build()
    packages = build.get("packages", {})
    package = next((p for prefix, p in packages.items() if name.startswith(prefix + ".")), None)
    hint = ("install it with: sudo apt install %s" % package if package else
            "install the package that provides it")
    built_for = ("%s's QGIS %s" % (build["system"], build["qgis"])
                 if build.get("system") and build.get("qgis") else "another system")
    return ("Hyperstream's provider library cannot be loaded: %s is missing (%s). The plugin "
            "is built for %s." % (name, hint, built_for))


def _report(message):
    # The message log (QGIS's Log Messages panel); stderr too, where qgis_process shows it (3.40
    # refuses to enable a plugin that fails to load, and does not show the log).
    sys.stderr.write(message + "\n")
    try:
        from qgis.core import Qgis, QgsMessageLog
        QgsMessageLog.logMessage(message, "Hyperstream", Qgis.Critical)
    except ImportError:
        pass


def _load():
    global _library
    if _library is None:
        try:
            path = _private_copy()
            # RTLD_DEEPBIND: the library's own dependencies (OpenBLAS) come before what the host
            # already loaded. Without it, inside QGIS its BLAS calls bind to the first CBLAS
            # loaded (seen: GSL's reference libgslcblas, single-threaded and many times slower).
            mode = ctypes.RTLD_LOCAL | getattr(os, "RTLD_DEEPBIND", 0)
            library = ctypes.CDLL(path, mode=mode)
        except OSError as error:
            message = _why(error)
            _report(message)
            raise RuntimeError(message) from None
        library.hyperstream_register.argtypes = [ctypes.c_char_p]
        library.hyperstream_register.restype = ctypes.c_int
        _library = library
    return _library


class HyperstreamPlugin:
    def __init__(self, iface):
        self.iface = iface
        self.registered = False

    def initProcessing(self):
        if not self.registered:
            library = _load()
            # The help pages go beside this build's copy of the library.
            help_folder = os.path.join(os.path.dirname(library._name), "help")
            self.registered = bool(library.hyperstream_register(help_folder.encode()))

    def initGui(self):
        # The desktop never calls initProcessing() by itself.
        try:
            self.initProcessing()
        except RuntimeError as error:
            if self.iface is not None:
                self.iface.messageBar().pushCritical("Hyperstream", str(error))
            raise

    def unload(self):
        if self.registered:
            _load().hyperstream_unregister()
            self.registered = False


def classFactory(iface):
    return HyperstreamPlugin(iface)
