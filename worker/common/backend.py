"""Select oslo.service's threading backend.

oslo.service binds its classes to a backend the first time one is asked
for (``oslo_service.service`` and oslo.messaging do so on import) and still
defaults to eventlet. ``worker/__init__.py`` imports this module, so the
choice is made before any of the project's modules runs.
"""

import sys
import warnings

# NOTE: eventlet is installed as a dependency of oslo.service, and futurist
# and oslo.utils import it when it is present (each only tries, and goes
# on without it); nothing here uses or patches it. Marked absent, it is
# never loaded: each process is about 10 MB and 250 modules smaller, the
# room that lets a worker process run 64 steps at once within the pool's
# memory target (100 MB while draining 100,000 rows).
sys.modules.setdefault('eventlet', None)
# Loaded anyway when something imported it before this package (a tool
# such as oslo-config-generator): it warns on import.
warnings.filterwarnings('ignore', message='\nEventlet is deprecated')

from oslo_service import backend  # noqa: E402
from oslo_service.backend import exceptions  # noqa: E402

try:
    backend.init_backend(backend.BackendType.THREADING)
except exceptions.BackendAlreadySelected:
    # A tool that imported oslo.service before this package (such as
    # oslo-config-generator listing every namespace's options) only reads
    # our option lists; the services check the backend when they start.
    pass


def require_threading():
    """Refuse to run a service on any backend but threading.

    :raises RuntimeError: when another backend was selected first.
    """
    selected = backend.get_backend_type()
    if selected is not backend.BackendType.THREADING:
        raise RuntimeError('oslo.service backend is %s, not threading: '
                           'something imported oslo.service before the '
                           'worker package' % selected)
