"""Point cloud math: the cloud type, outlier filtering, thinning and the surveyed area."""
