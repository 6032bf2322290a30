"""``barbican-retry-manage notification …``: the URLs and what they got.

A URL's secrets are never shown: ``has_secret`` says whether it has one
of its own and ``previous_secret_until`` until when the one it replaced
still signs; ``url set-secret`` prints a secret it generates, once. A
URL with a secret belongs to a project (``project_id``), whose orders
alone may name it, or is global: ``url set-secret`` (its first secret)
and ``url set-owner`` say which.
"""

import argparse
import datetime

from scheduler.manage import base
from scheduler.manage import display
from scheduler.manage import orders
from scheduler.manage import schedules
from worker import api
from worker.api import casts
from worker.api import values as order_values
from worker.common import inputs
from worker.common import targets
from worker.db import models
from worker import notification_admin
from worker.notifications import events
from worker.notifications import sealing
from worker.notifications import signing
from worker import values

URL_COLUMNS = ('id', 'url', 'available', 'failures', 'last_error',
               'last_failure_at', 'disabled_at', 'waiting_deliveries',
               'has_secret', 'previous_secret_until', 'project_id')
#: ``url show``: the list's columns and when the row was made and written.
URL_SHOW_COLUMNS = URL_COLUMNS + ('created_at', 'updated_at')
#: The columns read from the row as they are.
_ROW_COLUMNS = ('id', 'url', 'available', 'failures', 'last_error',
                'last_failure_at', 'disabled_at')

DELIVERY_COLUMNS = ('url', 'state', 'delivered_sequence', 'last_sequence',
                    'waiting_events', 'attempt', 'failures', 'next_retry_at',
                    'last_error')

EVENT_COLUMNS = ('sequence', 'event_id', 'event', 'status', 'step', 'time')

# What a delivery is doing, from its step's status.
_STATES = {models.STEP_DONE: 'DELIVERED', models.STEP_WAITING: 'PAUSED'}


def _get_url(session, store, url_id):
    """The URL row with this id, or None."""
    return store.get_urls(session, [url_id]).get(url_id)


def _url(session, store, text):
    """The URL row named by its text or its id."""
    row = store.find_url(session, text)
    if row is None and text.isdigit():
        row = _get_url(session, store, int(text))
    if row is None:
        row = store.find_url(session, _canonical_or_same(text))
    if row is None:
        raise LookupError('no notification URL %s (see "notification url '
                          'list")' % text)
    return row


def _canonical_or_same(text):
    """``text`` canonical, as URLs are kept; or as it is, if no URL."""
    try:
        return targets.canonical(text)
    except targets.RefusedUrl:
        return text


def _url_values(url, waiting, now):
    """The ``URL_COLUMNS`` of a URL's row; never its secrets."""
    until = url.previous_secret_until
    return display.row(url, _ROW_COLUMNS) + (
        waiting, url.secret is not None,
        display.value(until) if until is not None and until > now else None,
        url.project_id)


def _change_url(app, text, change):
    """Call ``change(store, session, url id, now)`` on the URL named by
    ``text``, in a transaction of its own; returns its row after."""
    database = app.database
    store = database.repositories.notifications
    now = app.now()
    with database.session() as session, session.begin():
        url_id = _url(session, store, text).id
        change(store, session, url_id, now)
        return _get_url(session, store, url_id)


class _OneUrl:
    """Mixin: the ``url`` argument."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('url', help='The URL (or its id).')
        return parser


class ListUrls(base.Lister):
    """List the URLs that receive notifications, which are unavailable,
    and which have a secret of their own."""

    def take_action(self, parsed_args):
        database = self.app.database
        store = database.repositories.notifications
        now = self.app.now()
        with database.reader() as session:
            urls = store.list_urls(session)
            waiting = {url.id: len(store.paused(session, url.id, None))
                       for url in urls if not url.available}
        return URL_COLUMNS, [_url_values(url, waiting.get(url.id, 0), now)
                             for url in urls]


class ShowUrl(_OneUrl, base.ShowOne):
    """Show one URL: its state, its last error, whether it has a secret of
    its own and until when the previous one signs (never the secrets)."""

    def take_action(self, parsed_args):
        database = self.app.database
        store = database.repositories.notifications
        now = self.app.now()
        with database.reader() as session:
            url = _url(session, store, parsed_args.url)
            waiting = (0 if url.available else
                       len(store.paused(session, url.id, None)))
        return URL_SHOW_COLUMNS, _url_values(url, waiting, now) + (
            display.value(url.created_at), display.value(url.updated_at))


def _add_owner_arguments(parser, required):
    """``--project PROJECT`` or ``--global``: who may name the URL."""
    owner = parser.add_mutually_exclusive_group(required=required)
    owner.add_argument(
        '--project', metavar='PROJECT', type=_project,
        help='Only the orders of this project may name the URL: another '
             'project\'s order naming it is refused.')
    owner.add_argument(
        '--global', dest='is_global', action='store_true',
        help='The orders of every project may name the URL, and have '
             'their events signed with its secret.')


def _owner(parsed_args):
    """``(True, project or None)`` if an owner was given, else
    ``(False, None)``."""
    if parsed_args.is_global:
        return True, None
    return parsed_args.project is not None, parsed_args.project


class SetSecret(_OneUrl, base.ShowOne):
    """Give a URL its own Standard Webhooks secret (the URL is added if
    no order named it yet).

    A secret generated here is printed once, and never again. With
    --keep-old-for, the secret it replaces (or [notifications] secret, if
    it had none) also signs until then, so that its receiver can switch
    at its own pace; without, it stops at once. A URL's first secret
    needs --project (only that project's orders may name the URL) or
    --global; a new secret keeps the URL's owner unless one is given."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_owner_arguments(parser, required=False)
        parser.add_argument(
            '--secret', metavar='whsec_…', type=_secret,
            help='The secret: "whsec_" and %d to %d random bytes in '
                 'base64. Default: %d bytes generated, printed once.'
                 % (signing.MIN_SECRET_BYTES, signing.MAX_SECRET_BYTES,
                    signing.GENERATED_BYTES))
        parser.add_argument(
            '--keep-old-for', metavar='DURATION', type=_keep_old_for,
            help='How long the secret replaced also signs (30s, 5m, 1h, '
                 '30d; %dd at most), by the database server\'s clock. '
                 'Default: it stops at once.'
                 % (notification_admin.MAX_KEEP_OLD_FOR_SECONDS // 86400))
        return parser

    def take_action(self, parsed_args):
        now = self.app.now()
        url_id = self._url_id(parsed_args.url, now)
        keep = parsed_args.keep_old_for
        given, project_id = _owner(parsed_args)
        try:
            url, generated = notification_admin.set_secret(
                self.app.database, self.app.conf, url_id, now,
                secret=parsed_args.secret, keep_old_for=keep,
                owner=project_id if given else notification_admin.UNCHANGED)
        except notification_admin.OwnerNeeded:
            raise ValueError(
                'a URL\'s first secret needs --project PROJECT (only its '
                'orders may name the URL) or --global') from None
        until = (None if keep is None else
                 now + datetime.timedelta(seconds=keep))
        return (('url', 'generated_secret', 'previous_secret_until',
                 'project_id'),
                (url['url'], generated, display.value(until),
                 url['project_id']))

    def _url_id(self, text, now):
        """The id of the URL named; a URL not known yet is added, if
        ``[notifications]`` allows its host."""
        database = self.app.database
        store = database.repositories.notifications
        with database.reader() as session:
            try:
                return _url(session, store, text).id
            except LookupError:
                if text.isdigit():
                    raise
        return notification_admin.add_url(database, self.app.conf, text, now)


class SetOwner(_OneUrl, base.ShowOne):
    """Choose which project's orders may name a URL (--project), or let
    every project's (--global), without changing its secret. An order
    created before, of another project, sends nothing more to it."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_owner_arguments(parser, required=True)
        return parser

    def take_action(self, parsed_args):
        database = self.app.database
        with database.reader() as session:
            url_id = _url(session, database.repositories.notifications,
                          parsed_args.url).id
        url = notification_admin.set_owner(database, url_id,
                                           _owner(parsed_args)[1],
                                           self.app.now())
        return (('url', 'has_secret', 'project_id'),
                (url['url'], url['has_secret'], url['project_id']))


class GenerateKey(base.ShowOne):
    """Print a new Fernet key, a line for [notifications]
    secret_key_file (nothing is written)."""

    def take_action(self, parsed_args):
        return ('key',), (sealing.generate_key(),)


class RotateKeys(base.Lister):
    """Encrypt every URL secret under the first key of [notifications]
    secret_key_file: after a new key was put first (the others still
    decrypt), and to encrypt the secrets stored in clear by the release
    before. Then the old keys can be dropped from the file."""

    def take_action(self, parsed_args):
        database = self.app.database
        store = database.repositories.notifications
        sealer = sealing.required(self.app.conf)
        with database.reader() as session:
            url_ids = [url.id for url in store.list_urls(session)
                       if url.secret is not None or url.previous_secret]
        clear = sum(_reseal(database, sealer, url_id)
                    for url_id in url_ids)
        return (('urls_encrypted', 'of_which_were_in_clear'),
                [(len(url_ids), clear)])


def _reseal(database, sealer, url_id):
    """Encrypt one URL's secrets under the first key, in a transaction of
    its own, again if a ``set-secret`` changed them meanwhile; True if
    one was in clear."""
    store = database.repositories.notifications
    while True:
        with database.session() as session, session.begin():
            url = _get_url(session, store, url_id)
            old = (url.secret, url.previous_secret)
            new = tuple(sealer.reseal(value) for value in old)
            if database.queries.notifications.replace_secrets(
                    session, url_id, old, new):
                return any(value is not None and sealing.is_clear(value)
                           for value in old)


def _project(text):
    """An argparse type: a project id as the API takes one (1 to
    ``worker.api.MAX_PROJECT_ID_LENGTH`` characters, no control
    character): any other could never match an order's."""
    try:
        return inputs.check_text(text, 'project_id',
                                 api.MAX_PROJECT_ID_LENGTH)
    except inputs.Refused as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _keep_old_for(text):
    """An argparse type: a duration (``schedules.duration``) that a
    replaced secret may go on signing."""
    seconds = schedules.duration(text)
    if seconds > notification_admin.MAX_KEEP_OLD_FOR_SECONDS:
        raise argparse.ArgumentTypeError(
            'a replaced secret signs for %dd at most'
            % (notification_admin.MAX_KEEP_OLD_FOR_SECONDS // 86400))
    return seconds


def _secret(text):
    """An argparse type: a valid ``whsec_`` secret."""
    try:
        return signing.check_secret(text)
    except signing.InvalidSecret as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class EnableUrl(_OneUrl, base.Lister):
    """Make an unavailable URL available; its waiting deliveries resume,
    each sending its events in order."""

    def take_action(self, parsed_args):
        database = self.app.database
        store = database.repositories.notifications
        now = self.app.now()
        # The URL first, committed: a delivery that stops to wait for it
        # holds its row, so every one that stopped is found below.
        url = _change_url(self.app, parsed_args.url,
                          lambda store, session, url_id, at:
                          database.queries.notifications.enable_url(
                              session, url_id, at))
        rows_per_cast = self.app.conf.scheduler.rows_per_cast
        api = orders.worker_api_or_none(self.app)
        resumed, failed = set(), 0
        while True:
            with database.session() as session, session.begin():
                found = store.paused(session, url.id, rows_per_cast)
                database.queries.notifications.resume(
                    session, url.id, [order_id for order_id, _ in found], now)
            failed += casts.cast_steps(api, [
                values.StepRef(models.delivery_name(url.id), order_id,
                               generation)
                for order_id, generation in found], rows_per_cast)
            again = resumed & {order_id for order_id, _ in found}
            resumed.update(order_id for order_id, _ in found)
            if not found or again:
                # Done; or the URL failed again and deliveries resumed
                # here wait once more: they wait for the next enable.
                break
        return (('url', 'available', 'deliveries_resumed', 'not_cast'),
                [(url.url, True, len(resumed), failed)])


class ShowNotifications(base.Lister):
    """Show an order's deliveries: what each URL acknowledged, what waits,
    the last error (with --events, the events themselves)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('order_id',
                            help='Order id, or a unique prefix of one.')
        parser.add_argument('--events', action='store_true',
                            help='List the order\'s events instead.')
        return parser

    def take_action(self, parsed_args):
        database = self.app.database
        repositories = database.repositories
        store = repositories.notifications
        # By its id or a prefix, as "order show" finds it.
        order_id = orders.order_api(self.app).find(
            parsed_args.order_id, all_projects=True).id
        with database.reader() as session:
            found = store.events_of_order(session, order_id)
            steps = repositories.steps.for_order(session, order_id)
            retries = order_values.retry_rows_by_step(
                repositories.retry_tasks.list_tasks(session,
                                                    order_id=order_id))
            urls = {name: _get_url(session, store, models.url_id_of(name))
                    for name in steps if models.url_id_of(name) is not None}
        if parsed_args.events:
            return EVENT_COLUMNS, [
                (event.sequence, event.event_id, event.event, event.status,
                 event.step, display.value(event.created_at))
                for event in found]
        last = found[-1].sequence if found else 0
        rows = []
        for name, url in sorted(urls.items()):
            step, retry = steps[name], retries.get(name)
            sent = events.delivered_sequence(step)
            rows.append((
                url.url if url else name,
                _STATES.get(step.status,
                            order_values.step_status(step, retry)),
                sent, last, last - sent, step.attempt, step.failures,
                display.value(retry.retry_at) if retry else None,
                step.last_error))
        return DELIVERY_COLUMNS, rows
