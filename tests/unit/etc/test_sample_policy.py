"""The generated sample policy: up to date, made by the tool operators
run (``oslopolicy-sample-generator --namespace barbican-retry``)."""

import os
import pathlib
import subprocess
import sys

ROOT = str(pathlib.Path(__file__).resolve().parents[3])
GENERATOR_CONFIG = 'etc/oslo-policy-generator/barbican-retry.conf'
SAMPLE = 'etc/barbican-retry/policy.yaml.sample'
BIN = os.path.dirname(sys.executable)


def test_committed_sample_policy_is_up_to_date(tmp_path):
    output = tmp_path / 'policy.yaml.sample'
    result = subprocess.run(
        [os.path.join(BIN, 'oslopolicy-sample-generator'), '--config-file',
         GENERATOR_CONFIG, '--output-file', str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    with open(os.path.join(ROOT, SAMPLE)) as sample:
        assert sample.read() == output.read_text(), (
            '%s is out of date; regenerate with: oslopolicy-sample-generator '
            '--config-file %s' % (SAMPLE, GENERATOR_CONFIG))


def test_the_namespace_and_enforcer_entry_points_work():
    # What oslopolicy-checker and oslopolicy-list-redundant load.
    result = subprocess.run(
        [os.path.join(BIN, 'oslopolicy-list-redundant'), '--namespace',
         'barbican-retry'],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
