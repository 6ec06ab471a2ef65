"""Triangle meshes of the surveyed surface: the 2.5D mesh from a height grid, the 3D mesh from the dense cloud,
and their textured form. The types here are what the meshing and texturing stages pass between them."""
