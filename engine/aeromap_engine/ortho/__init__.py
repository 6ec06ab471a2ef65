"""True orthophoto math: projecting ground cells into the images, visibility against the surface, choosing the
best view per cell and blending views across seams."""
