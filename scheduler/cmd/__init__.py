"""Console scripts: the retry daemon, and the entry points of the operator
commands (``scheduler.manage``)."""
