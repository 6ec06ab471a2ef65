"""Texturing a mesh from the photographs, after Waechter et al. 2014 (the method of ODM's texrecon): each face
takes the view that sees it best, smoothed over the mesh so that neighbours share views (`selection`); faces
sharing a view form patches whose texture coordinates are their projection into that image (`patches`); the
patches' image regions are packed into atlases (`atlas`) after their colours were levelled across the seams
between views (`seams`). `build.texture_mesh` runs the steps."""
