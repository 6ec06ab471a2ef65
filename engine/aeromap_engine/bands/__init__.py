"""Multispectral surveys: photographs that are the bands of one capture, grouped (groups.py), brought to
reflectance (radiometry.py) and aligned to the band the geometry was solved on (alignment.py, stack.py)."""
