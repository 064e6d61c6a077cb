"""Hyperstream QGIS plugin: loads the C++ Processing provider library and registers it.

qgis_process only loads Python plugins, so this small loader opens libhyperstream_qgis.so with
ctypes and calls its extern "C" entry points, which add the provider to QGIS's registry.
"""
import ctypes
import os

_library = None


def _load():
    global _library
    if _library is None:
        # RTLD_DEEPBIND: the library's own dependencies (OpenBLAS) come before what the host
        # already loaded. Without it, inside QGIS its BLAS calls bind to the first CBLAS loaded
        # (seen: GSL's reference libgslcblas, single-threaded and many times slower).
        mode = ctypes.RTLD_LOCAL | getattr(os, "RTLD_DEEPBIND", 0)
        path = os.path.join(os.path.dirname(__file__), "libhyperstream_qgis.so")
        _library = ctypes.CDLL(path, mode=mode)
        _library.hyperstream_register.restype = ctypes.c_int
    return _library


class HyperstreamPlugin:
    def __init__(self, iface):
        self.iface = iface
        self.registered = False

    def initProcessing(self):
        if not self.registered:
            self.registered = bool(_load().hyperstream_register())

    def initGui(self):
        # The desktop never calls initProcessing() by itself.
        self.initProcessing()

    def unload(self):
        if self.registered:
            _load().hyperstream_unregister()
            self.registered = False


def classFactory(iface):
    return HyperstreamPlugin(iface)
