"""The worker pool: owns orders, runs plugins, writes retry rows."""

# NOTE: oslo.service picks its backend the first time anything asks for it,
# and oslo.messaging asks on import; the default is still eventlet. Every
# module of the project lives under this package or imports it, so
# selecting the threading backend here happens before any of that.
from worker.common import backend  # noqa: F401
