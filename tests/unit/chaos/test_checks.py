"""The chaos run's count of runs at once on a resource key."""

import json

from tests.chaos import checks


def _log(tmp_path, runs):
    path = tmp_path / 'plugin.log'
    path.write_text(''.join(json.dumps(run) + '\n' for run in runs))
    return str(path)


def _run(key, started, ended):
    return {'order': 'o', 'step': 'call', 'token': 1, 'resource': key,
            'started': started, 'ended': ended}


def test_overlapping_runs_are_counted_per_key(tmp_path):
    log = _log(tmp_path, [
        _run('chaos:a', 0.0, 1.0), _run('chaos:a', 0.5, 1.5),
        _run('chaos:a', 0.9, 2.0), _run('chaos:b', 0.0, 3.0),
        # Runs of no resource are not counted.
        {'order': 'o', 'step': 'issue', 'token': 1, 'started': 0.0,
         'ended': 5.0}])

    assert checks.most_at_once(log) == {'chaos:a': 3, 'chaos:b': 1}


def test_a_run_that_starts_as_another_ends_is_not_at_once(tmp_path):
    log = _log(tmp_path, [_run('chaos:a', 0.0, 1.0),
                          _run('chaos:a', 1.0, 2.0),
                          _run('chaos:a', 2.0, 3.0)])

    assert checks.most_at_once(log) == {'chaos:a': 1}
