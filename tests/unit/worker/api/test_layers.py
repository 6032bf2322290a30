"""The package's modules import downhill only: a write goes from
``orders`` through ``checks`` and ``commands`` to the repositories, and
nothing below calls back up (no ``before_cast`` lambda, no import of a
module above)."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).parents[4] / 'worker' / 'api'

# Each module of the package, above those it may import.
LAYERS = [
    ('schedules', ('orders', 'requests', 'checks', 'errors')),
    ('orders', ('creating', 'casts', 'checks', 'commands', 'errors',
                'values', 'bulk', 'signalling', 'pausing')),
    ('creating', ('queries', 'admission', 'casts', 'checks', 'commands',
                  'errors', 'quotas', 'requests', 'values')),
    ('project_quotas', ('checks', 'errors', 'quotas')),
    ('pausing', ('checks', 'errors', 'values')),
    ('queries', ('checks', 'errors', 'values', 'meta_filters', 'pausing')),
    ('casts', ('coalesce',)),
    ('commands', ('admission', 'quotas')),
    ('values', ('checks',)),
    ('requests', ()),
    ('checks', ('errors',)),
    ('errors', ()),
    ('admission', ()),
    ('quotas', ()),
    ('coalesce', ()),
    ('dashboard', ('checks',)),
    ('logins', ()),
    ('bulk', ('checks', 'commands', 'errors', 'meta_filters', 'pausing',
              'values')),
    ('meta_filters', ('errors',)),
    ('signalling', ('checks', 'errors')),
]


def _package_imports(name):
    tree = ast.parse((ROOT / (name + '.py')).read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == 'worker.api':
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and \
                node.module.startswith('worker.api.'):
            found.add(node.module.split('.')[2])
    return found


def test_every_module_of_the_package_has_its_layer():
    assert sorted(path.stem for path in ROOT.glob('*.py')
                  if path.stem != '__init__') == sorted(
        name for name, _ in LAYERS)


@pytest.mark.parametrize('name,below', LAYERS)
def test_a_module_imports_only_what_is_below_it(name, below):
    assert _package_imports(name) - set(below) == set()
