"""The scheduler is a satellite; nothing uses eventlet.

Allow-lists, in both directions: of the ``worker`` package, the retry
daemon (``scheduler/`` but ``scheduler/manage/``) imports only what
``scheduler.WORKER_IMPORTS`` names and the operator commands
(``scheduler/manage/``) only what ``scheduler.manage.WORKER_IMPORTS``
names; the layer the latter names imports nothing else of the worker's
nor anything of the scheduler's; the daemon imports nothing of the
operator commands but their console scripts' entry points; neither goes
around ``database.repositories``; and the worker imports nothing of the
scheduler's. The all-in-one demo, which runs both sides in one process,
is the one named exception.
"""

import ast
import dataclasses
import pathlib
import subprocess
import sys

import scheduler
from scheduler import manage
from worker.db import repositories

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Run both sides in one process, by design: the demo, and the public
# helper of local development it is built on.
BOTH_SIDES = ('worker/cmd/demo.py', 'worker/local.py')


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from ('%s.%s' % (node.module, alias.name)
                        for alias in node.names)


def _in(name, packages):
    return any(name == package or name.startswith(package + '.')
               for package in packages)


def _allowed_by(packages):
    """Whether a module may be imported under the allow-list ``packages``.

    The worker package itself (it selects oslo.service's backend) always
    may, and so may the scheduler's own modules.
    """
    return lambda name: (name == 'worker' or
                         _in(name, ('scheduler',) + packages) or
                         # The package of an allowed module:
                         # ``from worker.notifications import bus``.
                         any(package.startswith(name + '.')
                             for package in packages))


def _shared(name):
    """True if module ``name`` of the worker package is shared."""
    return name == 'worker' or _in(name, manage.WORKER_IMPORTS)


def _sources(*parts):
    for path in sorted(ROOT.joinpath(*parts).rglob('*.py')):
        relative = str(path.relative_to(ROOT))
        if relative not in BOTH_SIDES:
            yield relative, path


def _daemon_sources():
    """The retry daemon's modules: the scheduler's but the operator's."""
    return [(relative, path) for relative, path in _sources('scheduler')
            if not relative.startswith('scheduler/manage/')]


def _offenders(sources, allowed):
    return [(relative, name) for relative, path in sources
            for name in _imports(path)
            if name.split('.')[0] in ('worker', 'scheduler') and
            not allowed(name)]


def test_retry_daemon_imports_only_its_allow_list_of_the_worker():
    assert _offenders(_daemon_sources(),
                      _allowed_by(scheduler.WORKER_IMPORTS)) == []


def test_operator_commands_import_only_their_allow_list_of_the_worker():
    sources = list(_sources('scheduler', 'manage'))
    assert len(sources) > 10, 'the operator commands were not found'
    assert _offenders(sources, _allowed_by(manage.WORKER_IMPORTS)) == []


def test_order_commands_go_through_the_public_api_only():
    """``order create|show|list|cancel`` use ``worker.api`` as a service
    would, never the internals it stands in front of."""
    path = ROOT / 'scheduler' / 'manage' / 'orders.py'
    assert _offenders([('scheduler/manage/orders.py', path)],
                      lambda name: name == 'worker' or _in(name, (
                          'scheduler', manage.ORDER_COMMANDS_IMPORT))) == []
    assert manage.ORDER_COMMANDS_IMPORT in set(_imports(path))


def test_schedule_commands_go_through_the_public_apis_only():
    """``schedule create|list|show|delete`` use ``worker.api.schedules``
    (and ``worker.api``'s names), as a service would."""
    path = ROOT / 'scheduler' / 'manage' / 'schedules.py'
    assert _offenders([('scheduler/manage/schedules.py', path)],
                      lambda name: name == 'worker' or _in(name, (
                          'scheduler', manage.ORDER_COMMANDS_IMPORT,
                          manage.SCHEDULE_COMMANDS_IMPORT))) == []
    assert manage.SCHEDULE_COMMANDS_IMPORT in set(_imports(path))


def test_retry_daemon_imports_nothing_of_the_operator_commands():
    # Their console scripts' entry points (scheduler/cmd/) excepted.
    sources = [(relative, path) for relative, path in _daemon_sources()
               if not relative.startswith('scheduler/cmd/')]
    assert _offenders(sources,
                      lambda name: not _in(name, ('scheduler.manage',))) == []


def test_scheduler_reads_the_repositories_through_its_database():
    """Units of work and commands use ``database.repositories``, never a
    repository module itself, so either kind of database serves them."""
    modules = tuple('worker.db.' + field.name
                    for field in dataclasses.fields(repositories.Repositories))
    assert len(modules) > 5, 'the repositories were not found'
    assert _offenders(_sources('scheduler'),
                      lambda name: not _in(name, modules)) == []


def test_shared_layer_imports_only_itself():
    sources = [(relative, path) for relative, path in _sources('worker')
               if _shared(relative[:-3].replace('/', '.')
                          .removesuffix('.__init__'))]
    assert len(sources) > 10, 'the shared layer was not found'
    assert _offenders(sources, _shared) == []


def test_worker_imports_nothing_of_the_scheduler():
    assert _offenders(_sources('worker'),
                      lambda name: name.startswith('worker')) == []


def test_the_allow_lists_can_fail():
    # The demo is the exception because it does import both sides.
    assert _offenders([(BOTH_SIDES[0], ROOT / BOTH_SIDES[0])],
                      lambda name: name.startswith('worker'))
    # The operator commands need more than the retry daemon's list.
    assert _offenders(_sources('scheduler', 'manage'),
                      _allowed_by(scheduler.WORKER_IMPORTS))


def _modules_loaded_by(statement):
    # A name that maps to None was refused, not loaded.
    code = ('import sys; %s; '
            'print("\\n".join(sorted(name for name, module in '
            'sys.modules.items() if module is not None)))' % statement)
    output = subprocess.run([sys.executable, '-c', code], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    return set(output.stdout.split())


def test_scheduler_commands_load_only_the_shared_layer_of_the_worker():
    # The retry daemon's too: it imports less, but worker.conf registers
    # the options of the order types and notifications, and so loads them.
    loaded = _modules_loaded_by('import scheduler.cmd.retry, '
                                'scheduler.cmd.manage, scheduler.cmd.status')
    assert 'scheduler.manager' in loaded
    assert sorted(m for m in loaded
                  if m.split('.')[0] == 'worker' and not _shared(m)) == []


def test_retry_daemon_loads_nothing_of_the_operator_commands():
    loaded = _modules_loaded_by('import scheduler.cmd.retry')
    assert 'scheduler.manager' in loaded
    assert sorted(m for m in loaded
                  if _in(m, ('scheduler.manage',))) == []


def test_worker_command_loads_nothing_of_the_scheduler():
    loaded = _modules_loaded_by('import worker.cmd.worker')
    assert 'worker.manager' in loaded
    assert sorted(m for m in loaded if m.split('.')[0] == 'scheduler') == []


def test_no_command_loads_eventlet():
    """Installed as a dependency, unused on the threading backend: loaded,
    it costs every process about 10 MB (worker.common.backend)."""
    loaded = _modules_loaded_by(
        'import worker.cmd.worker, worker.cmd.demo, scheduler.cmd.retry, '
        'scheduler.cmd.manage, scheduler.cmd.status')
    assert 'worker.manager' in loaded and 'scheduler.manager' in loaded
    assert sorted(m for m in loaded
                  if m.split('.')[0] in ('eventlet', 'greenlet', 'dns')) == []


def test_services_run_on_the_threading_backend_unpatched():
    code = ('import scheduler.service, worker.service; '
            'from oslo_service import backend; '
            'from oslo_utils import eventletutils; '
            'print(backend.get_backend_type().value, '
            'eventletutils.is_monkey_patched("thread"), '
            'eventletutils.is_monkey_patched("socket"))')
    output = subprocess.run([sys.executable, '-W', 'ignore', '-c', code],
                            cwd=ROOT, capture_output=True, text=True,
                            check=True)
    assert output.stdout.split() == ['threading', 'False', 'False']


def test_top_level_alembic_folder_is_not_a_package():
    assert (ROOT / 'alembic' / 'env.py').exists()
    assert not (ROOT / 'alembic' / '__init__.py').exists()


def _prefix_readers(sources):
    """The modules that read a delivery's name prefix themselves."""
    return sorted(relative for relative, path in sources
                  if 'DELIVERY_PREFIX' in path.read_text())


def test_one_predicate_tells_a_delivery_by_its_name():
    # worker.db.models.is_delivery (and delivery_steps, its SQL form) is
    # the one place; everything else asks it.
    assert _prefix_readers(
        list(_sources('worker')) + list(_sources('scheduler'))) == [
        'worker/db/models.py']
    assert _prefix_readers([('a.py', ROOT / 'worker/db/models.py')])


#: The layers of the worker package, lowest first. A module belongs to
#: the layer of the longest prefix that names it (``worker`` names the
#: package alone); it may import its own layer and those below, never one
#: above (doc/developer.md, "The map of the house").
LAYERS = (
    # The ``openstack retry`` plugin: a client of the REST API over HTTP,
    # below everything so that it imports nothing else of the project.
    ('client', ('worker.osc',)),
    # The ground floor: the values every layer passes around, the
    # utilities, and the wrappers of oslo.context, oslo.messaging's
    # transport and OpenTelemetry.
    ('ground', ('worker', 'worker.values', 'worker.common',
                'worker.context', 'worker.rpc', 'worker.tracing')),
    # What the order types declare: the work, its plugins and policies.
    ('declarations', ('worker.order_types', 'worker.plugins',
                      'worker.policy')),
    ('conf', ('worker.conf',)),
    ('db', ('worker.db',)),
    ('notifications', ('worker.notifications',)),
    # The worker pool: the RPC client and server side, the steps.
    ('services', ('worker.intake', 'worker.manager', 'worker.metrics',
                  'worker.rpcapi', 'worker.service', 'worker.steps')),
    ('api', ('worker.api', 'worker.schedule_api',
             'worker.notification_admin')),
    # What faces the network through the API: the REST API and the
    # Keystone listener.
    ('front', ('worker.rest', 'worker.keystone_listener')),
    ('cmd', ('worker.cmd', 'worker.local')),
)


def _layer_of(name):
    """The index in ``LAYERS`` of module ``name``, None if it has none."""
    found = [(len(prefix), index)
             for index, (_, prefixes) in enumerate(LAYERS)
             for prefix in prefixes
             if name == prefix or
             (prefix != 'worker' and name.startswith(prefix + '.'))]
    return max(found)[1] if found else None


def _module_of(relative):
    return relative[:-3].replace('/', '.').removesuffix('.__init__')


def _imports_up(root):
    """``[(file, imported module)]``: the imports of the worker package
    under ``root`` that climb to a higher layer than their module's."""
    found = []
    for path in sorted(root.joinpath('worker').rglob('*.py')):
        relative = str(path.relative_to(root))
        layer = _layer_of(_module_of(relative))
        for name in _imports(path):
            target = _layer_of(name)
            if target is not None and target > layer:
                found.append((relative, name))
    return found


def test_every_module_of_the_worker_has_a_layer():
    modules = [_module_of(str(path.relative_to(ROOT)))
               for path in ROOT.joinpath('worker').rglob('*.py')]
    assert len(modules) > 100, 'the worker package was not found'
    assert sorted(m for m in modules if _layer_of(m) is None) == []


def test_no_import_climbs_back_up_the_layers():
    assert _imports_up(ROOT) == []


def test_an_import_up_the_layers_is_found(tmp_path):
    package = tmp_path / 'worker'
    (package / 'db').mkdir(parents=True)
    (package / 'db' / 'rows.py').write_text(
        'from worker.notifications import events\nimport worker.values\n')
    (package / 'values.py').write_text('import worker.api\n')
    assert _imports_up(tmp_path) == [
        ('worker/db/rows.py', 'worker.notifications'),
        ('worker/db/rows.py', 'worker.notifications.events'),
        ('worker/values.py', 'worker.api')]
