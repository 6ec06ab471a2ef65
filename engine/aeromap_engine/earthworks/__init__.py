"""Earthworks on elevation models: volumes over a polygon against a base, contour lines."""
