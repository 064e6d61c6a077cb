#!/usr/bin/env python3
"""Largest difference of two raw float32 files (ENVI .bin, one band or several; float64 ones with
--float64) relative to the largest magnitude in the first, and whether their NaNs sit in the same
places. No GDAL or numpy, so that it runs on the GPU machine:

    bench/compare_raw.py [--float64] A.bin B.bin
"""
import array
import math
import sys


def samples(path, typecode):
    values = array.array(typecode)
    with open(path, "rb") as f:
        values.frombytes(f.read())
    return values


def main():
    args = [a for a in sys.argv[1:] if a != "--float64"]
    typecode = "d" if "--float64" in sys.argv[1:] else "f"
    a, b = samples(args[0], typecode), samples(args[1], typecode)
    if len(a) != len(b):
        sys.exit(f"{len(a)} samples against {len(b)}")
    largest = worst = 0.0
    nan_places = 0
    for x, y in zip(a, b):
        if math.isnan(x) or math.isnan(y):
            nan_places += math.isnan(x) != math.isnan(y)
            continue
        largest = max(largest, abs(x))
        worst = max(worst, abs(x - y))
    print(f"{len(a)} samples: largest difference {worst:.3g} of {largest:.6g} "
          f"({worst / largest if largest else 0:.3g} relative); NaNs differ at {nan_places}")


main()
