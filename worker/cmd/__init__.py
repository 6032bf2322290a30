"""Console scripts of the worker side."""
