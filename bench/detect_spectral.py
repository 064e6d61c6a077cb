"""Spectral Python's rx, matched_filter, ace and spectral_angles beside hyperstream's scores
(detect_bench.sh):
   detect_spectral.py CUBE TARGETS.csv LIBRARY.csv FOLDER
Each detector timed from reading CUBE (float64, in memory) to its scores, with the background
statistics it computes itself (SAM: the angles and the nearest spectrum's class); then the
largest |hyperstream - Spectral Python| over the pixels, relative to the largest score, for
FOLDER/spy_rx.tif, spy_mf.tif, spy_ace.tif and spy_angles.tif, and the classes of spy_sam.tif
that differ."""
import csv
import sys
import time

import numpy as np
import spectral
from osgeo import gdal

cube_path, targets_path, library_path, folder = sys.argv[1:5]


def spectra(path):
    with open(path) as table:
        rows = list(csv.reader(table))[1:]
    return np.array([[float(v) for v in row[3:]] for row in rows])


targets, library = spectra(targets_path), spectra(library_path)


def read():
    return gdal.Open(cube_path).ReadAsArray().transpose(1, 2, 0).astype(np.float64)


def run(name, detect):
    start = time.perf_counter()
    X = read()
    scores = detect(X)
    print(f"Spectral Python {name}: {time.perf_counter() - start:.2f} s")
    return scores


results = {
    "rx": run("rx", lambda X: spectral.rx(X)[np.newaxis]),
    "mf": run("matched_filter", lambda X: np.stack(
        [spectral.matched_filter(X, t) for t in targets])),
    "ace": run("ace", lambda X: np.stack([spectral.ace(X, t) for t in targets])),
    "angles": run("spectral_angles", lambda X: spectral.spectral_angles(X, library)),
}
classes = np.argmin(results["angles"], axis=2) + 1
results["angles"] = results["angles"].transpose(2, 0, 1)
ours = gdal.Open(f"{folder}/spy_sam.tif").ReadAsArray()
print(f"sam: {np.count_nonzero(ours != classes)} of {classes.size} classes differ")
for name, theirs in results.items():
    ours = gdal.Open(f"{folder}/spy_{name}.tif").ReadAsArray().reshape(theirs.shape)
    largest = np.max(np.abs(theirs))
    print(f"{name}: largest difference {np.max(np.abs(ours - theirs)) / largest:.2e} of the "
          f"largest score {largest:.6g}")
