"""Products made elsewhere (an orthophoto, DSM, DTM, point cloud or textured model), checked and laid out as a
task's results, so that an imported survey is viewed, measured and compared like a processed one (WebODM's
external import)."""
