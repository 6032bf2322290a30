"""Fixtures of the functional tests: real databases, a real broker."""

import os
import shutil
import tempfile

import pytest

from tests.chaos import services as chaos_services
from tests.functional import databases
from tests.functional import keystone as keystone_module
from tests.functional import processes
from worker.db import migration
from worker.db import session as db_session
from worker.order_types import certificate


def _missing(what):
    # bin/run-tests.sh starts every server and sets this: there, a missing
    # server is a failure, never a silent skip.
    if os.environ.get('BARBICAN_RETRY_TEST_REQUIRE_SERVICES') == '1':
        pytest.fail('%s is not available' % what)
    pytest.skip('no %s (run the suite with bin/run-tests.sh)' % what)


def pytest_generate_tests(metafunc):
    """Run every test that takes ``backend`` on each database backend.

    A test that names its backends itself (``parametrize('backend', …)``)
    keeps its own list.
    """
    named = any('backend' in mark.args[0]
                for mark in metafunc.definition.iter_markers('parametrize'))
    if 'backend' in metafunc.fixturenames and not named:
        metafunc.parametrize('backend', databases.BACKENDS)


def _new_database(backend, tmp_path):
    if backend != 'sqlite' and not databases.server_url(backend):
        _missing('%s server' % backend)
    url = databases.create(backend, tmp_path)
    yield url
    databases.drop(backend, url)


@pytest.fixture
def database_url(backend, tmp_path):
    """URL of an empty database of its own on ``backend``."""
    yield from _new_database(backend, tmp_path)


@pytest.fixture(scope='session')
def templates():
    """Each backend's database migrated once, for ``database`` to copy."""
    made = databases.Templates()
    yield made
    made.close()


@pytest.fixture
def database(backend, database_url, templates):
    """A ``worker.db.session.Database`` at the head of the migrations (a
    copy of a migrated one: ``databases.Templates``)."""
    templates.fill(backend, database_url)
    db = db_session.Database.from_url(database_url)
    yield db
    db.dispose()


@pytest.fixture
def migrated_database(backend, tmp_path):
    """A ``worker.db.session.Database`` migrated by the migrations
    themselves (in a database of its own, not ``database_url``'s), for
    the tests of the migrations."""
    for url in _new_database(backend, tmp_path):
        db = db_session.Database.from_url(url)
        migration.upgrade(db.engine)
        yield db
        db.dispose()


@pytest.fixture
def transport_url():
    """URL of the real RabbitMQ started by bin/run-tests.sh."""
    url = os.environ.get('BARBICAN_RETRY_TEST_TRANSPORT_URL')
    if not url:
        _missing('RabbitMQ')
    return url


@pytest.fixture(scope='session')
def keystone():
    """The real Keystone started by bin/run-tests.sh
    (``tests.functional.keystone.Keystone``)."""
    found = keystone_module.Keystone.from_environment()
    if found is None:
        if os.environ.get('BARBICAN_RETRY_TEST_NO_KEYSTONE') == '1':
            pytest.skip('Keystone left out (BARBICAN_RETRY_TEST_NO_KEYSTONE)')
        _missing('Keystone')
    return found


@pytest.fixture(scope='session')
def personas(keystone):
    """Projects A and B with their readers and members, an admin and a
    service user, made once per test process in the real Keystone
    (``tests.functional.keystone.Personas``); deleted at the end."""
    made = keystone.make_personas()
    yield made
    keystone.remove_personas(made)


@pytest.fixture
def promtool():
    """Path of Prometheus's ``promtool`` (Debian's package prometheus)."""
    path = shutil.which('promtool')
    if not path:
        _missing('promtool (Debian package prometheus)')
    return path


@pytest.fixture(scope='module')
def cluster_workdir():
    """A directory for the clusters of a module (``cluster.sh``), removed
    at its end; the module is skipped without a MariaDB server."""
    if not shutil.which('mariadbd', path=os.environ.get('PATH', '') +
                        ':/usr/sbin') and \
            os.environ.get('BARBICAN_RETRY_TEST_REQUIRE_SERVICES') != '1':
        pytest.skip('no MariaDB server (run the suite with '
                    'bin/run-tests.sh)')
    workdir = tempfile.mkdtemp(prefix='barbican-retry-cluster-')
    chaos_services.make_reachable(workdir)
    yield workdir
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def deployment(tmp_path, backend, database, database_url, transport_url):
    """Returns ``make(options)`` building a ``processes.Deployment``.

    Every process it started is killed at the end of the test.
    """
    made = []
    nodes = ()
    if backend == 'mysql' and os.environ.get(
            chaos_services.CLUSTER_VARIABLE):
        # The Galera variant (bin/run-tests.sh): each daemon on a node of
        # its own.
        nodes = chaos_services.Clusters(str(tmp_path)).nodes(database_url)

    def make(options):
        made.append(processes.Deployment(tmp_path, database_url,
                                         transport_url, options,
                                         nodes=nodes))
        return made[-1]

    yield make
    for deployment in made:
        deployment.kill_all()


@pytest.fixture
def use_plugin(monkeypatch):
    """Returns ``use(plugin)``: certificate orders run over ``plugin``.

    In place of the configured ``[worker] certificate_plugin``, for this
    test only.
    """
    def use(plugin):
        monkeypatch.setattr(certificate.CertificateOrder, 'build',
                            classmethod(lambda cls, conf: cls(plugin)))
    return use
