"""Console scripts of the retry scheduler and the operator commands."""
