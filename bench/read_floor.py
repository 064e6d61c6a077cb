#!/usr/bin/python3
"""The decompression floor: GDAL reading a whole raster PASSES times with every core.

usage: read_floor.py RASTER [PASSES]

Rows of blocks at a time, all bands into one pixel-interleaved buffer, through one dataset opened
with NUM_THREADS=ALL_CPUS (GDAL's multi-threaded GeoTIFF decoding); the cache is flushed after each
row of blocks. Prints the seconds per pass.
"""
import sys
import time

import numpy as np
from osgeo import gdal

gdal.UseExceptions()
path, passes = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1
ds = gdal.OpenEx(path, gdal.OF_RASTER, open_options=['NUM_THREADS=ALL_CPUS'])
w, h, nb = ds.RasterXSize, ds.RasterYSize, ds.RasterCount
band = ds.GetRasterBand(1)
rows = band.GetBlockSize()[1]
dtype = gdal.GetDataTypeSize(band.DataType) // 8
buf = np.empty(rows * w * nb * dtype, np.uint8)
for p in range(passes):
    start = time.time()
    for y in range(0, h, rows):
        n = min(rows, h - y)
        ds.ReadRaster(0, y, w, n, buf_type=band.DataType, buf_pixel_space=dtype * nb,
                      buf_line_space=dtype * nb * w, buf_band_space=dtype,
                      buf_obj=buf[:n * w * nb * dtype])
        ds.FlushCache()
    print(f'pass {p + 1}: {time.time() - start:.2f} s')
