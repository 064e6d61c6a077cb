"""What a Python user has today for the unmixing chain, timed on one cube: Spectral Python's
smacc (endmembers) and ppi (pixel purity index), and a plain NumPy/SciPy FCLS (Heinz & Chang's
sum-to-one row appended to the endmembers, weight DELTA, then scipy.optimize.nnls per pixel), each
from reading the file (GDAL, into float64) to the result in memory.

    python3 bench/unmixing_python.py CUBE.tif P ENDMEMBERS.csv [PPI_ITERATIONS=1000]

ENDMEMBERS.csv is a table of `hyperstream endmembers` (FCLS uses its spectra, so both tools unmix
with the same endmembers); prints one line per tool: name, seconds, and what it found.
"""
import sys
import time

import numpy as np
from osgeo import gdal
from scipy.optimize import nnls
from spectral.algorithms import ppi, smacc

cube_path, count, table = sys.argv[1], int(sys.argv[2]), sys.argv[3]
iterations = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
DELTA = 1e3  # Heinz & Chang's weight of the sum-to-one row, relative to the data's scale


def read():
    dataset = gdal.Open(cube_path)
    cube = dataset.ReadAsArray().astype(np.float64)  # bands x rows x cols
    return np.moveaxis(cube, 0, -1)                 # rows x cols x bands, as SPy takes it


start = time.perf_counter()
image = read()
read_seconds = time.perf_counter() - start
print(f"read {read_seconds:.3f} s")

start = time.perf_counter()
spectra = read().reshape(-1, image.shape[-1])
found, indices, _ = smacc(spectra, min_endmembers=count)
print(f"smacc {time.perf_counter() - start:.3f} s  {found.shape[0]} endmembers")

start = time.perf_counter()
counts = ppi(read(), iterations)
print(f"ppi {time.perf_counter() - start:.3f} s  {iterations} projections, "
      f"{int((counts > 0).sum())} pixels counted")

endmembers = np.loadtxt(table, delimiter=",", skiprows=1, usecols=None, dtype=str)[:, 3:]
endmembers = endmembers.astype(np.float64)  # P x bands
start = time.perf_counter()
pixels = read().reshape(-1, image.shape[-1])
scale = DELTA * np.abs(endmembers).max()
augmented = np.vstack([endmembers.T, scale * np.ones(endmembers.shape[0])])
abundances = np.empty((pixels.shape[0], endmembers.shape[0]))
for i, pixel in enumerate(pixels):
    abundances[i] = nnls(augmented, np.append(pixel, scale))[0]
print(f"fcls {time.perf_counter() - start:.3f} s  {pixels.shape[0]} pixels, "
      f"sum of abundances {abundances.sum(1).min():.4f}..{abundances.sum(1).max():.4f}")
