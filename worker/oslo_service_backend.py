"""Select oslo.service's threading backend.

oslo.service binds its classes to a backend when ``oslo_service.service``
is first imported, and still defaults to eventlet. Every module that uses
oslo.service imports this one first; importing it is idempotent.
"""

import warnings

# NOTE: eventlet is installed as a dependency of oslo.service and futurist
# imports it when present, which warns; nothing here uses or patches it.
warnings.filterwarnings('ignore', message='\nEventlet is deprecated')

from oslo_service import backend  # noqa: E402

backend.init_backend(backend.BackendType.THREADING)
