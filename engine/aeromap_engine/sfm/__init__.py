"""Structure from motion: features, pairs, matching, mapping and georeferencing of the reconstruction."""
