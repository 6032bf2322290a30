"""The house's own limits on ``worker/`` and ``scheduler/``: no class over
250 lines, no function over 50 (metric declarations excepted), no module
over 400 lines unless its first lines (a comment) or its docstring (a
paragraph naming the 400 lines) say why it stays whole.

The lines counted are a definition's own, from its ``def`` or ``class``
line to its last, docstring and comments included.
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

MAX_CLASS = 250
MAX_FUNCTION = 50
MAX_MODULE = 400

#: Places not yet held to the limits: none; kept so that a redrawing
#: under way can be named here, and must be emptied again.
NOT_YET: tuple[str, ...] = ()

#: Metric declarations: a list of what is exported, one metric after the
#: other, longer than a function should be and no harder to read.
METRIC_MODULES = ('metrics.py',)


def _sources():
    for top in ('worker', 'scheduler'):
        for path in sorted((ROOT / top).rglob('*.py')):
            name = path.relative_to(ROOT).as_posix()
            if not name.startswith(NOT_YET):
                yield name, path.read_text()


def offenders(sources):
    """``[(place, what, lines)]`` of the definitions and modules of
    ``sources`` (``[(name, text)]``) over the limits."""
    found = []
    for name, text in sources:
        lines = text.count('\n')
        tree = ast.parse(text)
        if lines > MAX_MODULE and not _says_why(text, tree):
            found.append((name, 'module', lines))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.ClassDef, ast.FunctionDef,
                                     ast.AsyncFunctionDef)):
                continue
            length = node.end_lineno - node.lineno + 1
            if isinstance(node, ast.ClassDef):
                over = length > MAX_CLASS
            else:
                over = length > MAX_FUNCTION and not (
                    name.endswith(METRIC_MODULES) and
                    node.name == '__init__')
            if over:
                found.append(('%s:%d' % (name, node.lineno), node.name,
                              length))
    return found


def _says_why(text, tree):
    """Whether a long module says why it stays whole: a comment in its
    first lines, or a paragraph of its docstring that names the limit."""
    if any(line.startswith('# ') for line in text.splitlines()[:3]):
        return True
    return '400 lines' in (ast.get_docstring(tree) or '')


def test_worker_and_scheduler_keep_within_the_house_limits():
    sources = list(_sources())
    assert len(sources) > 100, 'the sources were not found'
    assert offenders(sources) == []


@pytest.mark.parametrize('text, found', [
    ('class Big:\n' + '    x = 1\n' * 250, [('m.py:1', 'Big', 251)]),
    ('def long():\n' + '    x = 1\n' * 50, [('m.py:1', 'long', 51)]),
    ('def short():\n' + '    x = 1\n' * 49, []),
    ('"""Doc."""\n' + 'x = 1\n' * 400, [('m.py', 'module', 401)]),
    ('# Whole: one table.\n"""Doc."""\n' + 'x = 1\n' * 400, []),
    ('"""Doc.\n\nOver 400 lines: one table."""\n' + 'x = 1\n' * 400, []),
])
def test_the_limits_find_what_is_over_them(text, found):
    assert offenders([('m.py', text)]) == found


def test_metric_declarations_may_be_long():
    text = 'class M:\n    def __init__(self):\n' + '        x = 1\n' * 60
    assert offenders([('scheduler/metrics.py', text)]) == []
    assert offenders([('scheduler/other.py', text)]) == [
        ('scheduler/other.py:2', '__init__', 61)]
