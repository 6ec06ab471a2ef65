"""Map tile pyramids (Web Mercator, XYZ scheme, 256 px): the grid math, the styling of elevation, and the
pyramid built once per raster."""
