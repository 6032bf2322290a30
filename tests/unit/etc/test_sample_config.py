"""The generated sample config: up to date, with our defaults; option bounds.

The sample is regenerated with the venv's ``oslo-config-generator`` (the
one operators and packagers run) into a temporary file and compared with
the committed ``etc/barbican-retry/barbican-retry.conf.sample``.
"""

import configparser
import difflib
import importlib.metadata
import os
import pathlib
import re
import subprocess
import sys

from oslo_config import cfg
from oslo_config import types
import pytest

ROOT = str(pathlib.Path(__file__).resolve().parents[3])
GENERATOR_CONFIG = 'etc/oslo-config-generator/barbican-retry.conf'
SAMPLE = 'etc/barbican-retry/barbican-retry.conf.sample'
GENERATOR = os.path.join(os.path.dirname(sys.executable),
                         'oslo-config-generator')
REGENERATE = 'regenerate with: oslo-config-generator --config-file %s' % (
    GENERATOR_CONFIG)
OUR_NAMESPACES = ('barbican_retry.worker', 'barbican_retry.scheduler',
                  'barbican_retry.api')

# "#name = value" lines of a generated sample: an option and its default.
_OPTION_LINE = re.compile(r'^#(\w+) = (.*)$')


@pytest.fixture(scope='module')
def generated(tmp_path_factory):
    """The text the generator makes now from the committed generator config."""
    output = tmp_path_factory.mktemp('sample') / 'barbican-retry.conf.sample'
    result = subprocess.run(
        [GENERATOR, '--config-file', GENERATOR_CONFIG,
         '--output-file', str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, (
        'oslo-config-generator failed (%s):\n%s'
        % (result.returncode, result.stderr))
    return output.read_text()


def _defaults(sample_text):
    """Map group -> {option: default as written} of a generated sample."""
    groups, group = {}, None
    for line in sample_text.splitlines():
        if line.startswith('[') and line.endswith(']'):
            group = groups.setdefault(line[1:-1], {})
            continue
        match = _OPTION_LINE.match(line)
        if match and group is not None:
            group.setdefault(match.group(1), match.group(2))
    return groups


def _generator_namespaces():
    with open(os.path.join(ROOT, GENERATOR_CONFIG)) as config:
        text = config.read()
    # strict=False: "namespace" is repeated (the regex below reads them all).
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.read_string(text)
    namespaces = re.findall(r'(?m)^namespace\s*=\s*(\S+)\s*$', text)
    return parser, namespaces


def _our_opts():
    entry_points = {ep.name: ep for ep in
                    importlib.metadata.entry_points(group='oslo.config.opts')}
    for namespace in OUR_NAMESPACES:
        for group, opts in entry_points[namespace].load()():
            group_name = getattr(group, 'name', group) or 'DEFAULT'
            for opt in opts:
                yield '[%s] %s' % (group_name, opt.dest), opt


def test_generator_config_lists_registered_namespaces():
    parser, namespaces = _generator_namespaces()
    assert parser['DEFAULT']['output_file'] == SAMPLE
    assert parser['DEFAULT']['wrap_width'] == '79'
    registered = {ep.name for ep in
                  importlib.metadata.entry_points(group='oslo.config.opts')}
    # The generator skips an unknown namespace without a word.
    assert set(OUR_NAMESPACES) <= set(namespaces)
    assert set(namespaces) - registered == set()


def test_committed_sample_is_up_to_date(generated):
    with open(os.path.join(ROOT, SAMPLE)) as sample:
        committed = sample.read()
    if committed != generated:
        diff = ''.join(difflib.unified_diff(
            committed.splitlines(True), generated.splitlines(True),
            SAMPLE + ' (committed)', SAMPLE + ' (generated)'))
        pytest.fail('%s is out of date; %s\n%s' % (SAMPLE, REGENERATE, diff))


def test_sample_carries_our_defaults(generated):
    defaults = _defaults(generated)
    # Set by the oslo.config.opts.defaults hook of barbican_retry.worker.
    assert defaults['database']['connection'] == \
        'sqlite:///barbican-retry.sqlite', (
            'the sample shows [database] connection = %s: the '
            'oslo.config.opts.defaults hook (worker.conf.opts:'
            'set_lib_defaults) must change the default on oslo.db\'s Opt '
            'objects, which the generator reads'
            % defaults['database']['connection'])
    assert defaults['scheduler']['schedule_period_seconds'] == '15'
    assert defaults['simple_certificate']['delay_before_update_seconds'] == \
        '5'
    assert defaults['worker']['topic'] == 'barbican_retry_worker'
    # Machine-dependent defaults show their sample_default, so the sample
    # does not change with the host that generates it.
    assert defaults['worker']['workers'] == '<number of CPUs>'
    assert defaults['DEFAULT']['host'] == '<server-hostname.example.com>'
    # The libraries' groups an operator sets are there too.
    assert 'transport_url' in defaults['DEFAULT']
    assert 'graceful_shutdown_timeout' in defaults['DEFAULT']
    assert 'debug' in defaults['DEFAULT']


def test_sample_lines_fit_the_wrap_width(generated):
    too_long = [line for line in generated.splitlines()
                if len(line) > 79 and not _OPTION_LINE.match(line)]
    assert too_long == []


def test_our_number_options_are_bounded_and_documented():
    opts = dict(_our_opts())
    numbers = {name: opt for name, opt in opts.items()
               if isinstance(opt.type, (types.Integer, types.Float))}
    # Guards against a vacuous pass if the entry points lose their options.
    assert '[scheduler] schedule_period_seconds' in numbers
    assert '[worker] workers' in numbers
    unbounded = sorted(name for name, opt in numbers.items()
                       if opt.type.min is None or opt.type.max is None)
    assert unbounded == [], 'give these options min= and max=: %s' % (
        unbounded,)
    assert all(isinstance(opt, (cfg.IntOpt, cfg.FloatOpt, cfg.PortOpt))
               for opt in numbers.values())


def test_our_options_have_help():
    undocumented = sorted(name for name, opt in _our_opts()
                          if not (opt.help or '').strip())
    assert undocumented == []
