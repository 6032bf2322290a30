"""The type checker catches a wrong argument to the modules it checks.

``setup.cfg [mypy]`` checks the modules that hold decisions strictly
(bin/run-tests.sh and ``tox -e mypy`` run it); this makes sure that their
annotations are strict enough to matter: a correct call passes, a wrong
one is an error.
"""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

SNIPPET = '''\
import datetime

from scheduler import liveness
from scheduler import slots
from worker.plugins import base

slots.delay_to_slot(1e9, 15.0, 0, 2, 0.2)
base.RetryLater(3600, method='check_certificate_status')
liveness.alive_since(datetime.datetime(2024, 1, 1), 60)
slots.delay_to_slot('1e9', 15.0, 0, 2, 0.2)
base.RetryLater('an hour')
liveness.alive_since(datetime.datetime(2024, 1, 1), '60')
'''


def test_mypy_refuses_a_wrong_argument(tmp_path):
    pytest.importorskip('mypy')
    snippet = tmp_path / 'snippet.py'
    snippet.write_text(SNIPPET)
    result = subprocess.run(
        [sys.executable, '-m', 'mypy', '--config-file',
         str(ROOT / 'setup.cfg'), '--cache-dir', str(tmp_path / 'cache'),
         '--no-error-summary', str(snippet)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    errors = sorted(int(line.split(':')[1])
                    for line in result.stdout.splitlines()
                    if line.startswith(str(snippet)) and
                    '[arg-type]' in line)
    assert errors == [10, 11, 12], result.stdout + result.stderr
