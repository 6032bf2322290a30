"""The installed order types, loaded by name through stevedore.

The order types are the one declaration of which steps exist: the worker
runs them, the operator commands create orders from them, and the retry
scheduler casts a retry row only if its step is a row of its order (which
was created from the type).
"""

import functools

from stevedore import extension

from worker.order_types import base

NAMESPACE = 'barbican_retry.order_types'


class UnknownOrderType(LookupError):
    """No order type of this name is installed."""


#: An order's graph that its installed type does not declare.
UnknownWorkflowVersion = base.UnknownWorkflowVersion


@functools.lru_cache(maxsize=1)
def installed():
    """Return ``{name: Workflow}`` of every installed order type.

    Loaded and checked once per process.

    :raises base.InvalidOrderType: an installed type's declaration is
        wrong, or it cannot be imported; the message names it.
    """
    def refuse(manager, entry_point, exc):
        raise base.InvalidOrderType('order type %s cannot be loaded: %s'
                                    % (entry_point.name, exc)) from exc

    manager = extension.ExtensionManager(
        NAMESPACE, invoke_on_load=False, on_load_failure_callback=refuse)
    return {ext.name: base.check(ext.name, ext.plugin)
            for ext in sorted(manager, key=lambda ext: ext.name)}


def get(name):
    """Return the ``Workflow`` of the order type ``name``.

    :raises UnknownOrderType: no such type is installed; the message lists
        those that are.
    """
    workflows = installed()
    try:
        return workflows[name]
    except KeyError:
        raise UnknownOrderType('unknown order type %r; installed: %s'
                               % (name, ', '.join(sorted(workflows))))


def instantiate(workflow, conf):
    """Build an instance of the workflow's type (``OrderType.build``).

    Called for each step, so options changed by a reload apply at once.
    """
    return workflow.type_class.build(conf)
