"""What the REST API returns of ``worker.api``'s values.

An order is returned as ``barbican-retry-manage order show -f json``
prints it: the same fields, times as ``YYYY-MM-DD HH:MM:SS.mmm`` (naive
UTC, the database server's clock), ``meta`` as its JSON text with sorted
keys, and ``steps`` a list. A client that reads one reads the other.
"""

import datetime
import json

ORDER_FIELDS = ('id', 'type', 'status', 'project_id', 'priority',
                'error_reason', 'meta', 'idempotency_key', 'request_id',
                'global_request_id', 'schedule_id', 'created_at',
                'updated_at', 'not_before', 'workflow_version')

STEP_FIELDS = ('name', 'after', 'status', 'attempt', 'owner', 'started_at',
               'finished_at', 'next_retry_at', 'last_error', 'crashes',
               'waiting_for')

RUN_FIELDS = ('step', 'attempt', 'worker', 'started_at', 'finished_at',
              'result', 'error', 'requested_by')

SCHEDULE_FIELDS = ('id', 'type', 'project_id', 'priority', 'every_seconds',
                   'cron', 'meta', 'next_tick_at', 'last_tick_at',
                   'last_order_id', 'created_at', 'updated_at', 'timezone',
                   'overlap', 'buffered_tick_at')


PAUSE_FIELDS = ('target', 'name', 'reason', 'created_at', 'project_id')
#: The fields of each pause of an order's ``paused_by``.
PAUSED_BY_FIELDS = ('target', 'name', 'reason', 'created_at')


def value(item):
    """``item`` as the operator commands' JSON prints it."""
    if isinstance(item, datetime.datetime):
        return item.isoformat(sep=' ', timespec='milliseconds')
    if isinstance(item, dict):
        return json.dumps(item, sort_keys=True)
    if isinstance(item, tuple):
        return [value(member) for member in item]
    return item


def _fields(obj, fields):
    return {field: value(getattr(obj, field)) for field in fields}


def order(found, with_steps=True):
    """An ``api.Order`` (with its steps unless listed)."""
    shown = _fields(found, ORDER_FIELDS)
    if with_steps:
        shown['steps'] = [_fields(step, STEP_FIELDS) for step in found.steps]
    if found.paused_by:
        # Only while paused, as ``order show``.
        shown['paused_by'] = [_fields(held, PAUSED_BY_FIELDS)
                              for held in found.paused_by]
    return shown


def order_in_list(found):
    """An order of a listing: no meta and no steps, as ``order list``."""
    shown = order(found, with_steps=False)
    del shown['meta']
    return shown


def run(step_run):
    """An ``api.StepRun`` of ``history``."""
    return _fields(step_run, RUN_FIELDS)


SIGNAL_FIELDS = ('order_id', 'signal_id', 'name', 'created_at',
                 'consumed_at', 'consumed_by', 'repeated')


def signal(sent):
    """An ``api.Signal``, as ``order signal -f json``: its payload as its
    JSON text whatever its kind, as meta."""
    return dict(_fields(sent, SIGNAL_FIELDS),
                payload=json.dumps(sent.payload, sort_keys=True))


def schedule(found):
    """A ``schedule_api.Schedule``."""
    return _fields(found, SCHEDULE_FIELDS)


def order_type(info):
    """An ``api.OrderTypeInfo``, as ``order type list -f json``."""
    return {'name': info.name,
            'steps': [{'name': name, 'after': list(after)}
                      for name, after in info.steps],
            'compensation': info.compensation,
            'meta_schema': info.meta_schema}


def url(values):
    """A notification URL's fields (``worker.notification_admin``)."""
    return {field: value(item) for field, item in values.items()}


def pause(found):
    """An ``api.Pause``, as ``pause list -f json``."""
    return _fields(found, PAUSE_FIELDS)
