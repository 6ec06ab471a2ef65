"""Aeromap's photogrammetry engine: aerial photographs in, ODM-layout map products out."""

__version__ = "0.1.0"
