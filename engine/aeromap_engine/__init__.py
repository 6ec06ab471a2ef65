"""Aeromap's photogrammetry engine: aerial photographs in, ODM-layout map products out."""

import os

# GDAL caches raster blocks up to 5 % of the machine's memory by default: writing a large orthophoto or DEM
# would fill that much, whatever the tiles the stages work on. A fixed cache keeps the engine's memory bounded
# and the same on every machine (set before GDAL reads it, at its first raster).
os.environ.setdefault("GDAL_CACHEMAX", "256")

# GNU OpenMP's threads spin on the CPU while they wait for work: where the engine shares the machine (a node that
# runs other work, several runs at once, more processes than cores) a spinning thread holds the core that the
# thread it waits for needs, and MeshLab's filters took several times as long. Waiting threads that sleep give
# the same results. Read when libgomp loads, so set before anything that loads it is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

__version__ = "0.1.0"
