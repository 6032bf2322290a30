"""Options of the installed order types: their policies, overridable.

For each installed order type ``TYPE``:

- ``[order_type:TYPE] deadline_seconds``: the whole order's deadline;
  ``step_events``: whether its orders notify each step's end;
- ``[step:TYPE.STEP]``: every field of ``worker.policy.StepPolicy`` for
  that step (and for the type's compensation step). Unset, a field keeps
  the value the order type declares.

- ``[OPTION_GROUP]``: the options a type declares for itself
  (``OrderType.option_group`` and ``options``), such as ``[fanout]``.
"""

import dataclasses

from oslo_config import cfg

from worker.conf import groups
from worker import order_types
from worker import policy

# [worker] options of the release before per-step policies: still honoured
# for every step when an operator set them (and no [step:...] override
# says otherwise).
_DEPRECATED = {
    'max_unavailable_retries': ('max_attempts', lambda value: value + 1),
    'unavailable_backoff_base_seconds': ('backoff_base_seconds', float),
    'unavailable_backoff_max_seconds': ('backoff_max_seconds', float),
}


# Where a value comes from when an operator set it (not a default, even
# one that code changed).
_SET_BY_OPERATOR = (cfg.Locations.user, cfg.Locations.command_line,
                    cfg.Locations.environment, cfg.Locations.set_override)


def _policy_opts():
    defaults = policy.StepPolicy()
    unset = ' Unset: as the order type declares.'
    return [
        cfg.ListOpt('retry_on', mutable=True,
                    help='Exception class names (short or qualified) that '
                         'retry the step; "*" retries every unexpected '
                         'exception. A remote service unavailable always '
                         'retries.' + unset),
        cfg.ListOpt('never_retry', mutable=True,
                    help='Exception class names that never retry the step, '
                         'even if retry_on matches them.' + unset),
        cfg.StrOpt('backoff', choices=policy.BACKOFFS, mutable=True,
                   help='How the delay between retries grows.' + unset),
        cfg.FloatOpt('backoff_base_seconds', min=0.0, max=86400.0,
                     mutable=True,
                     help='First delay between retries (default %g).%s'
                          % (defaults.backoff_base_seconds, unset)),
        cfg.FloatOpt('backoff_max_seconds', min=0.0, max=604800.0,
                     mutable=True,
                     help='Cap of one delay, also of a delay the remote '
                          'side asks for (default %g).%s'
                          % (defaults.backoff_max_seconds, unset)),
        cfg.BoolOpt('jitter', mutable=True,
                    help='Draw half of each delay at random.' + unset),
        cfg.IntOpt('max_attempts', min=1, max=100000, mutable=True,
                   help='Runs that may fail (a failure or a lost lease) '
                        'before the order goes to ERROR (default %d).%s'
                        % (defaults.max_attempts, unset)),
        cfg.FloatOpt('timeout_seconds', min=0.001, max=604800.0,
                     mutable=True,
                     help='Lease of one run: a run still going after this '
                          'long loses its claim, even on a live worker, '
                          'and the step is retried (default %g).%s'
                          % (defaults.timeout_seconds, unset)),
        cfg.FloatOpt('deadline_seconds', min=0.0, max=31536000.0,
                     mutable=True,
                     help='The step gives up this long after its first '
                          'run (at most a year); 0 for none.' + unset),
        cfg.IntOpt('max_polls', min=0, max=10000000, mutable=True,
                   help='Times the step may ask to be polled again before '
                        'the order goes to ERROR; 0 for no limit '
                        '(default %d).%s' % (defaults.max_polls, unset)),
        cfg.IntOpt('max_running', min=0, max=1000000, mutable=True,
                   help='How many runs of this step (of every order of '
                        'its type) may go on at once, across every worker '
                        'and host; a run over the bound waits for one to '
                        'end, as for a resource slot. 0 for no bound.' +
                        unset),
    ]


def _type_opts():
    return [
        cfg.FloatOpt('deadline_seconds', min=0.0, max=31536000.0,
                     mutable=True,
                     help='An order of this type still PENDING this long '
                          'after its creation (at most a year) goes to '
                          'ERROR at its next step; 0 for none. Unset: as '
                          'the order type declares.'),
        cfg.BoolOpt('step_events', mutable=True,
                    help='Notify the subscribers of an order of this type '
                         'of each step that ends (step.done, step.failed), '
                         'besides its status changes. Unset: as the order '
                         'type declares.'),
        cfg.IntOpt('max_running', min=0, max=1000000,
                   help='How many steps of orders of this type may run at '
                        'once, across every worker and host; a step over '
                        'the bound waits for one to end, as for a resource '
                        'slot. 0 for no bound. Unset: as the order type '
                        'declares (no bound by default).'),
        cfg.IntOpt('max_pending', min=1, max=100000000,
                   help='How many orders of this type may be PENDING at '
                        'once: creating one more is refused '
                        '(worker.api.TooManyPendingOrders) and writes '
                        'nothing. Unset: no bound.'),
        cfg.StrOpt('topic',
                   help='The RPC topic the steps of this type are cast to, '
                        'served by workers started with that topic '
                        '(barbican-worker --topic), so that slow types '
                        'cannot hold the step threads of fast ones. '
                        'Unset: [worker] topic.'),
    ]


def type_group(type_name):
    """The option group of the order type ``type_name``."""
    return 'order_type:%s' % type_name


def step_group(type_name, step_name):
    """The option group of one step's policy."""
    return 'step:%s.%s' % (type_name, step_name)


def _groups():
    """``[(OptGroup, [opts])]`` of the installed order types."""
    result = []
    for name, workflow in order_types.installed().items():
        type_class = workflow.type_class
        if type_class.option_group and type_class.options:
            result.append((cfg.OptGroup(
                type_class.option_group, title='%s order type options' % name,
                help='Options of the %s order type.' % name),
                list(type_class.options)))
        result.append((cfg.OptGroup(
            type_group(name), title='Order type %s' % name,
            help='Options of the %s order type.' % name), _type_opts()))
        for step in _declared_steps(workflow):
            result.append((cfg.OptGroup(
                step_group(name, step.name),
                title='Step %s of order type %s' % (step.name, name),
                help='Retry policy of step %s of the %s order type.'
                     % (step.name, name)), _policy_opts()))
    return result


def _declared_steps(workflow):
    """The steps of every graph ``workflow``'s type declares (its
    previous ones' too: their orders run them), one of each name."""
    found = {}
    for graph in (workflow,) + workflow.previous:
        for step in graph.steps + ((graph.compensation,)
                                   if graph.compensation else ()):
            found.setdefault(step.name, step)
    return list(found.values())


def register_opts(conf):
    """Register the option groups of every installed order type."""
    for group, opts in _groups():
        groups.register_group_opts(conf, group, opts)


def list_opts():
    """Return the options of this module for the sample config."""
    return dict(_groups())


def step_policy(conf, workflow, step_name):
    """The policy of one step: declared, then what the operator set."""
    declared = workflow.step(step_name).policy
    changes = {}
    for old, (field, convert) in _DEPRECATED.items():
        if conf.get_location(old, 'worker').location in _SET_BY_OPERATOR:
            changes[field] = convert(conf.worker[old])
    group = conf[step_group(workflow.type_name, step_name)]
    for field in dataclasses.fields(policy.StepPolicy):
        value = group[field.name]
        if value is not None:
            changes[field.name] = (tuple(value) if field.name in
                                   ('retry_on', 'never_retry') else value)
    return dataclasses.replace(declared, **changes) if changes else declared


def step_events(conf, workflow):
    """True if orders of ``workflow``'s type notify each step's end."""
    value = conf[type_group(workflow.type_name)].step_events
    return workflow.step_events if value is None else value


def max_running(conf, workflow):
    """How many steps of orders of ``workflow``'s type may run at once
    (0 for no bound): ``[order_type:T] max_running``, else as the type
    declares."""
    value = conf[type_group(workflow.type_name)].max_running
    return workflow.max_running if value is None else value


def order_deadline_seconds(conf, workflow):
    """The whole order's deadline in seconds (0 for none)."""
    value = conf[type_group(workflow.type_name)].deadline_seconds
    return workflow.deadline_seconds if value is None else value


def topic(conf, type_name):
    """The RPC topic the steps of orders of ``type_name`` are cast to:
    ``[order_type:T] topic``, or ``[worker] topic`` when it is unset or
    when the type is not installed in this process (its group is not
    registered)."""
    group = type_group(type_name)
    value = conf[group].topic if group in conf else None
    return value or conf.worker.topic


def types_of_topic(conf, served):
    """The installed order types whose steps are cast to ``served``."""
    return [name for name in order_types.installed()
            if topic(conf, name) == served]


def max_pending(conf, workflow):
    """How many orders of ``workflow``'s type may be PENDING at once, or
    None for no bound (``[order_type:T] max_pending``)."""
    return conf[type_group(workflow.type_name)].max_pending
