"""Aeromap's photogrammetry engine: aerial photographs in, ODM-layout map products out."""

import os

# GDAL caches raster blocks up to 5 % of the machine's memory by default: writing a large orthophoto or DEM
# would fill that much, whatever the tiles the stages work on. A fixed cache keeps the engine's memory bounded
# and the same on every machine (set before GDAL reads it, at its first raster).
os.environ.setdefault("GDAL_CACHEMAX", "256")

__version__ = "0.1.0"
