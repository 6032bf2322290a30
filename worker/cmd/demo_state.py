"""The demo's state directory: the configuration file it runs with, and
the ``barbican-retry-manage`` commands that look into it afterwards.

The demo writes its configuration into the state directory and reads it
back from there, so that ``barbican-retry-manage --config-file`` on that
file opens the very database the demo used.
"""

import configparser
import os
import shlex
import sys

from worker.conf import order_types as type_options
from worker import order_types

DATABASE = 'demo.sqlite'
CONFIG = 'demo.conf'
LOG = 'demo.log'

_HEADER = '''\
# The configuration barbican-retry-demo ran with (written at each run).
# barbican-retry-manage reads it too, e.g.:
#   barbican-retry-manage --config-file %s order list
# fake:// is the demo's in-process transport: a cast from another process
# goes nowhere.
'''


def _options(state_dir, period, delay):
    """The demo's options, ``{group: {name: value}}``."""
    options = {
        'DEFAULT': {'transport_url': 'fake://'},
        'database': {'connection': 'sqlite:///%s' % os.path.join(
            state_dir, DATABASE)},
        'scheduler': {'schedule_period_seconds': period},
        'simple_certificate': {'delay_before_update_seconds': delay},
    }
    # Short back-offs, so that a step that meets an unavailable CA is
    # seen retrying, and done, within the demo's few seconds.
    for workflow in order_types.installed().values():
        for step in workflow.steps:
            options[type_options.step_group(workflow.type_name,
                                            step.name)] = {
                'backoff_base_seconds': 1.0, 'backoff_max_seconds': 2.0}
    return options


def write_config(state_dir, period, delay):
    """Write the demo's configuration file; return its path.

    :param state_dir: an absolute path: the database URL is read from
        any working directory.
    """
    path = os.path.join(state_dir, CONFIG)
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_dict(_options(state_dir, period, delay))
    with open(path, 'w') as config:
        config.write(_HEADER % shlex.quote(path))
        config.write('\n')
        parser.write(config)
    return path


def manage_command(config_path, *words):
    """The ``barbican-retry-manage`` command line on the demo's config.

    The console script beside this Python's (the demo's virtualenv), by
    its full path: the user's shell may have no virtualenv active.
    """
    script = os.path.join(os.path.dirname(sys.executable),
                          'barbican-retry-manage')
    if not os.access(script, os.X_OK):
        script = 'barbican-retry-manage'
    return ' '.join(shlex.quote(word) for word in
                    (script, '--config-file', config_path) + words)
