"""What a Python user has today for the unmixing chain, timed on one cube: Spectral Python's
smacc (endmembers) and ppi (pixel purity index), and a plain NumPy/SciPy FCLS (Heinz & Chang's
sum-to-one row appended to the endmembers, weight DELTA, then scipy.optimize.nnls per pixel), each
from reading the file (GDAL, into float64) to the result in memory.

    python3 bench/unmixing_python.py CUBE.tif P ENDMEMBERS.csv [PPI_ITERATIONS=1000] [ROUNDS=3]

ENDMEMBERS.csv is a table of `hyperstream endmembers` (FCLS uses its spectra, so both tools unmix
with the same endmembers); prints each round's seconds per tool, then their medians.
"""
import contextlib
import io
import sys
import time

import numpy as np
from osgeo import gdal
from scipy.optimize import nnls
from spectral.algorithms import ppi, smacc

cube_path, count, table = sys.argv[1], int(sys.argv[2]), sys.argv[3]
iterations = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 3
DELTA = 1e3  # Heinz & Chang's weight of the sum-to-one row, relative to the data's scale


def read():
    dataset = gdal.Open(cube_path)
    cube = dataset.ReadAsArray().astype(np.float64)  # bands x rows x cols
    return np.moveaxis(cube, 0, -1)                 # rows x cols x bands, as SPy takes it


image = read()
endmembers = np.loadtxt(table, delimiter=",", skiprows=1, dtype=str)[:, 3:].astype(np.float64)


def run_smacc():
    spectra = read().reshape(-1, image.shape[-1])
    with contextlib.redirect_stdout(io.StringIO()):  # smacc prints each endmember found
        found, _, _ = smacc(spectra, min_endmembers=count)
    return f"{found.shape[0]} endmembers"


def run_ppi():
    counts = ppi(read(), iterations)
    return f"{iterations} projections, {int((counts > 0).sum())} pixels counted"


def run_fcls():
    pixels = read().reshape(-1, image.shape[-1])
    scale = DELTA * np.abs(endmembers).max()
    augmented = np.vstack([endmembers.T, scale * np.ones(endmembers.shape[0])])
    abundances = np.empty((pixels.shape[0], endmembers.shape[0]))
    for i, pixel in enumerate(pixels):
        abundances[i] = nnls(augmented, np.append(pixel, scale))[0]
    return f"{pixels.shape[0]} pixels, sums {abundances.sum(1).min():.4f}..{abundances.sum(1).max():.4f}"


times = {"read": [], "smacc": [], "ppi": [], "fcls": []}
for r in range(1, rounds + 1):
    for name, tool in (("read", read), ("smacc", run_smacc), ("ppi", run_ppi), ("fcls", run_fcls)):
        start = time.perf_counter()
        said = tool()
        times[name].append(time.perf_counter() - start)
        print(f"round {r}  {name} {times[name][-1]:.3f} s  {said if isinstance(said, str) else ''}")
print("medians: " + ", ".join(f"{name} {np.median(t):.3f} s" for name, t in times.items()))
