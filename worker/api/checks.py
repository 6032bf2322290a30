"""What ``worker.api`` checks of a caller's input before it writes, with
its own errors (``worker.api.errors``).

The pure checks live in ``worker.common.inputs`` (shared with the
operator commands); this module holds the bounds of the front door and
turns ``inputs``' refusals into ``InvalidRequest`` kinds, so that no
other exception leaves ``worker.api`` for input it refuses.
"""

import contextlib
import datetime
import reprlib

from worker.api import errors
from worker.common import inputs
from worker.common import targets
from worker.db import models
from worker.notifications import subscriptions
from worker import order_types
from worker.order_types import base as order_types_base
from worker.order_types import meta as meta_module

#: The longest project id, idempotency key, order id (or schedule id),
#: order type name and callback URL; the first four are their columns'.
MAX_PROJECT_ID_LENGTH = inputs.MAX_PROJECT_ID_LENGTH
MAX_IDEMPOTENCY_KEY_LENGTH = 255
MAX_ORDER_ID_LENGTH = inputs.MAX_ORDER_ID_LENGTH
MAX_ORDER_TYPE_LENGTH = 32
MAX_URL_LENGTH = targets.MAX_URL_LENGTH
#: The longest reason of a cancel, and request id of a context.
MAX_REASON_LENGTH = 1000
MAX_REQUEST_ID_LENGTH = 64
#: The longest ``wait``: a day.
MAX_WAIT_SECONDS = 86400
#: The most orders one ``list`` or ``resume_many`` handles.
MAX_LIMIT = 1000
#: How far ahead an order may be asked to start (``not_before``): about
#: ten years.
MAX_START_DELAY = datetime.timedelta(days=3653)
#: An error's quote of a client's value, cut short.
SHORT = reprlib.Repr()
SHORT.maxstring = 300


@contextlib.contextmanager
def checking():
    """Turn a ``worker.common.inputs.Refused`` into this package's error:
    ``InvalidMeta`` (rule ``json``) for metadata that is not JSON,
    ``InvalidCharacters``, ``InvalidProjectScope`` or ``OutOfBounds``."""
    try:
        yield
    except inputs.NotJSON as exc:
        raise errors.InvalidMeta(exc.field, 'json', str(exc)) from None
    except inputs.BadCharacters as exc:
        raise errors.InvalidCharacters(str(exc), exc.field,
                                       exc.bound) from None
    except inputs.BadScope as exc:
        raise errors.InvalidProjectScope(str(exc)) from None
    except inputs.Refused as exc:
        raise errors.OutOfBounds(str(exc), exc.field, exc.bound) from None


def checked(check, *arguments):
    """``check(*arguments)``, a check of ``worker.common.inputs``, its
    refusal raised as this package's error (``InvalidRequest`` kinds).

    Not part of the stable API: the checks that ``worker.api.schedules``
    shares with the orders' go through it.
    """
    with checking():
        return check(*arguments)


def scope(project_id, all_projects):
    """``worker.common.inputs.scope``: the project id, or None for every
    project; ``InvalidProjectScope`` for neither or both."""
    return checked(inputs.scope, project_id, all_projects)


def check_text(value, field, max_length, allow_controls=False):
    """``inputs.check_text`` with this package's errors."""
    return checked(inputs.check_text, value, field, max_length,
                   allow_controls)


def check_order_id(order_id, field='order_id'):
    """An order (or schedule) id: a string of at most 36 characters."""
    checked(inputs.check_order_id, order_id, field)


def check_project(project_id):
    """A project id: a string of at most ``MAX_PROJECT_ID_LENGTH``."""
    check_text(project_id, 'project_id', MAX_PROJECT_ID_LENGTH)


def check_key(idempotency_key):
    """An idempotency key, or None."""
    if idempotency_key is not None:
        check_text(idempotency_key, 'idempotency_key',
                   MAX_IDEMPOTENCY_KEY_LENGTH)


def check_priority(priority):
    """A priority from ``MIN_PRIORITY`` to ``MAX_PRIORITY``."""
    try:
        models.check_priority(priority)
    except ValueError as exc:
        raise errors.InvalidRequest(str(exc)) from None


def check_limit(limit):
    """A ``limit`` of ``list`` or ``resume_many``: 1 to ``MAX_LIMIT``."""
    with checking():
        inputs.check_count(limit, 'limit', MAX_LIMIT)


def check_order_type(order_type):
    """An order type's name (installed or not): a short string."""
    check_text(order_type, 'order_type', MAX_ORDER_TYPE_LENGTH)


def selection(project_id, all_projects, limit, order_type):
    """The scope of a call that selects up to ``limit`` orders (of
    ``order_type``, or of any type for None): ``list``, ``resume_many``.
    """
    found = scope(project_id, all_projects)
    check_limit(limit)
    if order_type is not None:
        check_order_type(order_type)
    return found


def workflow(order_type):
    """The installed workflow of ``order_type``.

    :raises UnknownOrderType: no such type is installed.
    """
    check_order_type(order_type)
    try:
        return order_types.get(order_type)
    except order_types.UnknownOrderType as exc:
        raise errors.UnknownOrderType(str(exc)) from None


def order_workflow(order):
    """The installed workflow ``order`` (an ``Order``, its steps read)
    was created with: the one graph to apply to it.

    :raises UnknownOrderType: its type is not installed.
    :raises order_types.UnknownWorkflowVersion: its type does not declare
        its graph.
    """
    return workflow(order.type).of_order(
        order.workflow_version, [step.name for step in order.steps])


def check_meta(workflow, meta, conf):
    """Check ``meta``'s bounds (``[api_limits]``), then its type's
    ``meta_schema``: the schema is never run on what is too deep."""
    limits = conf.api_limits
    if not isinstance(meta, dict):
        # The words of jsonschema's "type" failure, as before the
        # bounds; never the value's repr, which could be huge or deep.
        raise errors.InvalidMeta('$', 'type', 'a %s is not of type %r'
                                 % (type(meta).__name__, 'object'))
    with checking():
        inputs.check_meta(meta, limits.max_meta_bytes,
                          limits.max_meta_depth)
    try:
        meta_module.validate_meta(workflow, meta)
    except meta_module.InvalidMeta as exc:
        # jsonschema quotes the value refused, whatever its size.
        raise errors.InvalidMeta(exc.path, exc.rule,
                                 SHORT.repr(exc.reason)[1:-1]) from None


#: The longest ``signal_id`` (``order_signals.signal_id``).
MAX_SIGNAL_ID_LENGTH = 64


def check_signal(workflow, name, signal_id, payload, conf):
    """A signal's name (one its order's type waits for), its id (None, or
    text of at most ``MAX_SIGNAL_ID_LENGTH``) and its payload (any JSON
    value, bounded as metadata by ``[api_limits]``)."""
    check_text(name, 'name', order_types_base.MAX_SIGNAL_NAME_LENGTH)
    if not order_types_base.SIGNAL_NAME.match(name):
        raise errors.InvalidRequest(
            'name %s is not a signal name: lower case letters, digits and '
            '_, in parts separated by dots' % SHORT.repr(name))
    if name not in workflow.signals:
        raise errors.InvalidRequest(
            'order type %s waits for no signal %s (its steps wait for: %s)'
            % (workflow.type_name, name,
               ', '.join(workflow.signals) or 'none'))
    if signal_id is not None:
        check_text(signal_id, 'signal_id', MAX_SIGNAL_ID_LENGTH)
    limits = conf.api_limits
    try:
        inputs.check_meta(payload, limits.max_meta_bytes,
                          limits.max_meta_depth)
    except inputs.NotJSON as exc:
        raise errors.InvalidRequest(
            'payload is not JSON: %s' % str(exc).replace('meta', 'payload',
                                                         1)) from None
    except inputs.Refused as exc:
        raise errors.OutOfBounds(str(exc).replace('meta', 'payload', 1),
                                 'payload', exc.bound) from None


def check_context(context):
    """A ``RequestContext`` whose request ids the order's columns hold,
    or None."""
    if context is None:
        return
    for field in ('request_id', 'global_request_id'):
        value = getattr(context, field, None)
        if value is not None or field == 'request_id':
            check_text(value, 'context.%s' % field, MAX_REQUEST_ID_LENGTH)


#: The most characters of each field of a ``Requester``: a Keystone user
#: id is 64, a user name and host together rarely more.
MAX_REQUESTER_FIELD_LENGTH = 255


def check_requester(requested_by):
    """A ``worker.api.Requester`` (who asked for a cancel or a resume) or
    None: its fields are strings, at most
    ``MAX_REQUESTER_FIELD_LENGTH`` characters, or None (but ``actor``)."""
    if requested_by is None:
        return
    fields = getattr(requested_by, 'as_dict', None)
    if fields is None:
        raise errors.InvalidRequest('requested_by must be a Requester, '
                                    'not %r' % type(requested_by).__name__)
    for field, value in fields().items():
        if value is not None or field == 'actor':
            check_text(value, 'requested_by.%s' % field,
                       MAX_REQUESTER_FIELD_LENGTH)


def check_count(count, conf):
    """``create_many``'s ``count``: 1 to ``[api_limits]
    max_orders_per_request``."""
    with checking():
        inputs.check_count(
            count, 'count', conf.api_limits.max_orders_per_request,
            '[api_limits] max_orders_per_request')


def check_status(status):
    """An order status to list, or None."""
    if status is not None and status not in models.ORDER_STATUSES:
        raise errors.InvalidRequest('status must be one of %s, not %s'
                                    % (', '.join(models.ORDER_STATUSES),
                                       SHORT.repr(status)))


def naive_utc(moment, name):
    """``moment`` as a naive UTC time (a naive one is UTC already), None
    as None; ``name`` is the parameter's, for the error."""
    if moment is None:
        return None
    if not isinstance(moment, datetime.datetime):
        raise errors.InvalidRequest('%s must be a datetime, not %s'
                                    % (name, type(moment).__name__))
    if moment.tzinfo is not None:
        try:
            moment = moment.astimezone(datetime.timezone.utc).replace(
                tzinfo=None)
        except (OverflowError, ValueError) as exc:
            # A time near year 1 or 9999 that UTC cannot hold, or a
            # tzinfo that gives no offset.
            raise errors.InvalidRequest('%s has no UTC time: %s'
                                        % (name, exc)) from None
    return moment


def check_start(not_before, now):
    """Refuse a ``not_before`` more than ``MAX_START_DELAY`` after
    ``now``: a typing mistake (a year 20260 for 2026), not a plan."""
    if not_before is not None and not_before - now > MAX_START_DELAY:
        raise errors.InvalidRequest(
            'not_before must be at most %d days ahead (%s), not %s'
            % (MAX_START_DELAY.days, (now + MAX_START_DELAY).isoformat(
                sep=' ', timespec='seconds'),
               not_before.isoformat(sep=' ', timespec='seconds')))


def callback_urls(conf, database, urls, project_id):
    """The order's URLs (``subscriptions.urls_for_order``): at most
    ``[api_limits] max_callback_urls`` strings of the caller's, none
    owned by another project."""
    if not isinstance(urls, (list, tuple)):
        raise errors.InvalidRequest('callback_urls must be a list of URLs, '
                                    'not %s' % type(urls).__name__)
    bound = conf.api_limits.max_callback_urls
    if len(urls) > bound:
        raise errors.OutOfBounds(
            'callback_urls must be %d URLs at most ([api_limits] '
            'max_callback_urls), not %d' % (bound, len(urls)),
            'callback_urls', '%d URLs at most' % bound)
    for index, url in enumerate(urls):
        check_text(url, 'callback_urls[%d]' % index, MAX_URL_LENGTH)
    try:
        return subscriptions.urls_for_order(conf, list(urls), database,
                                            project_id)
    except targets.RefusedUrl as exc:
        raise errors.URLNotAllowed(str(exc)) from None
