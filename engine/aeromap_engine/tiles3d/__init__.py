"""OGC 3D Tiles of the survey: the point cloud as an octree of pnts tiles, the textured model as glTF content,
each tileset placed on the globe by an east-north-up frame at its centre."""
