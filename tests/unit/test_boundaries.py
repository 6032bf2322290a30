"""The scheduler is a satellite; nothing uses eventlet."""

import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

FORBIDDEN_FOR_SCHEDULER = ('worker.manager', 'worker.service',
                           'worker.plugins', 'worker.cmd')


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from ('%s.%s' % (node.module, alias.name)
                        for alias in node.names)


def test_scheduler_sources_import_only_the_workers_client_side():
    offenders = [
        (str(path.relative_to(ROOT)), name)
        for path in (ROOT / 'scheduler').rglob('*.py')
        for name in _imports(path)
        if name.startswith(FORBIDDEN_FOR_SCHEDULER)]
    assert offenders == []


def _modules_loaded_by(statement):
    code = ('import sys; %s; '
            'print("\\n".join(sorted(sys.modules)))' % statement)
    output = subprocess.run([sys.executable, '-c', code], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    return set(output.stdout.split())


def test_scheduler_daemon_does_not_load_the_worker_side():
    loaded = _modules_loaded_by('import scheduler.cmd.retry, '
                                'scheduler.cmd.manage')
    assert not {m for m in loaded if m.startswith(FORBIDDEN_FOR_SCHEDULER)}


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
