"""Select oslo.service's threading backend.

oslo.service binds its classes to a backend the first time one is asked
for (``oslo_service.service`` and oslo.messaging do so on import) and still
defaults to eventlet. ``worker/__init__.py`` imports this module, so the
choice is made before any of the project's modules runs.
"""

import warnings

# NOTE: eventlet is installed as a dependency of oslo.service and futurist
# imports it when present, which warns; nothing here uses or patches it.
warnings.filterwarnings('ignore', message='\nEventlet is deprecated')

from oslo_service import backend  # noqa: E402

backend.init_backend(backend.BackendType.THREADING)
