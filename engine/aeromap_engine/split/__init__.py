"""Split-merge: large surveys cut into overlapping submodels, processed apart and merged into one set of products."""
