"""Sections of the configuration files that no option group reads.

``[order_type:TYPE]``, ``[step:TYPE.STEP]`` and ``[resource:PREFIX]`` are
named after things, not declared one by one: a typo (``[step:nosuch.step]``)
would be ignored without a word. The daemons warn at start about each
(``warn_unknown``).
"""

from oslo_log import log as logging

from worker.conf import resources
from worker import order_types

LOG = logging.getLogger(__name__)

_TYPE_PREFIX = 'order_type:'
_STEP_PREFIX = 'step:'


def _type_problem(type_name, installed):
    if type_name in installed:
        return None
    return 'no order type %s is installed (installed: %s)' % (
        type_name, ', '.join(installed) or 'none')


def _step_problem(name, installed):
    type_name, _, step_name = name.rpartition('.')
    problem = _type_problem(type_name, installed)
    if problem is not None:
        return problem
    workflow = installed[type_name]
    steps = [step.name for step in workflow.steps] + (
        [workflow.compensation.name] if workflow.compensation else [])
    if step_name in steps:
        return None
    return 'order type %s has no step %s (its steps: %s)' % (
        type_name, step_name, ', '.join(steps))


def _resource_problem(prefix):
    if prefix and ':' not in prefix:
        return None
    return ('a resource group is named after the prefix of its keys, the '
            'text before their first ":" (such as [resource:ca] for the '
            'keys ca:...)')


def unknown(conf):
    """``[(section, why it is ignored)]`` of the parsed files, in order."""
    installed = order_types.installed()
    found = []
    for section in conf.list_all_sections():
        problem = None
        if section.startswith(_TYPE_PREFIX):
            problem = _type_problem(section[len(_TYPE_PREFIX):], installed)
        elif section.startswith(_STEP_PREFIX):
            problem = _step_problem(section[len(_STEP_PREFIX):], installed)
        elif section.startswith(resources.GROUP_PREFIX):
            problem = _resource_problem(
                section[len(resources.GROUP_PREFIX):])
        if problem is not None:
            found.append((section, problem))
    return found


def warn_unknown(conf):
    """Log a warning naming each section ``unknown`` finds."""
    for section, problem in unknown(conf):
        LOG.warning('Section [%s] of the configuration is ignored: %s',
                    section, problem)
