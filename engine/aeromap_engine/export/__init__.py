"""Exports of a task's products as WebODM offers them: a raster (orthophoto, DSM, DTM) as GeoTIFF, coloured
GeoTIFF, JPEG, PNG or KMZ, and the point cloud as LAS, LAZ, PLY or CSV, each in the product's own CRS or
another."""
