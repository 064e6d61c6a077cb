"""How clean detection maps are with each choice of components, on a real scene: the scene's own
endmembers as targets (N-FINDR, COUNT of them), their FCLS abundances as the truth, and for the
matched filter, ACE and CEM the correlation of each score band with its endmember's abundance,
averaged over the endmembers, with the defaults and with --components all and N:
   python3 bench/detection_defaults.py HYPERSTREAM SCENE COUNT [N ...]
e.g. python3 bench/detection_defaults.py build/cli/hyperstream \\
        ../shared/data/jasper_ridge_100x100x198_uint16.tif 4 18"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from osgeo import gdal

hyperstream, scene, count = sys.argv[1], sys.argv[2], sys.argv[3]
others = sys.argv[4:]
folder = tempfile.mkdtemp()


def run(*arguments):
    subprocess.run([hyperstream, *arguments, "--quiet"], check=True)


def bands(path):
    dataset = gdal.Open(path)
    values = dataset.ReadAsArray().astype(np.float64)
    return values.reshape(values.shape[0], -1)


table = os.path.join(folder, "em.csv")
abundances = os.path.join(folder, "ab.tif")
run("endmembers", scene, table, "--count", count, "--method", "nfindr")
run("abundances", scene, table, abundances, "--method", "fcls")
truth = bands(abundances)
print("%s, %s N-FINDR endmembers as targets: mean r of each score band with its abundance"
      % (os.path.basename(scene), count))
for method in ["mf", "ace", "cem"]:
    line = []
    for components in ["default", "all", *others]:
        scores = os.path.join(folder, "%s_%s.tif" % (method, components))
        extra = [] if components == "default" else ["--components", components]
        run("detect", scene, table, scores, "--method", method, *extra)
        values = bands(scores)
        r = [np.corrcoef(values[i], truth[i])[0, 1] for i in range(truth.shape[0])]
        line.append("%s %.3f" % (components, np.mean(r)))
    print("%-4s %s" % (method, ", ".join(line)))
