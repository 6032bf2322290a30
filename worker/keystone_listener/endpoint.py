"""Keystone's notifications as the listener reads them.

Keystone sends ``identity.project.deleted`` with the project's id as the
payload's ``resource_info``, in both of its formats (``basic``: only
that; ``cadf``: a CADF event that also carries it). A notification the
listener cannot use (no such key, not a project id) is logged and
acknowledged: sent again, it would fail again, and it must not stop the
ones behind it.
"""

import time

from oslo_log import log as logging
import oslo_messaging

from worker import api

LOG = logging.getLogger(__name__)

#: The only notification read; oslo.messaging acknowledges the others
#: without calling the endpoint.
PROJECT_DELETED = 'identity.project.deleted'
#: Seconds before a notification whose handling failed (the database
#: unreachable) goes back to the queue, so that an outage is not a busy
#: loop of redeliveries.
REQUEUE_DELAY_SECONDS = 1.0


class MalformedNotification(ValueError):
    """A notification that names no project."""


def project_of(payload):
    """The id of the project a ``identity.project.deleted`` payload
    names.

    :raises MalformedNotification: the payload is not a dict, or its
        ``resource_info`` is not a non-empty string of at most
        ``worker.api.MAX_PROJECT_ID_LENGTH`` characters.
    """
    if not isinstance(payload, dict):
        raise MalformedNotification('its payload is a %s, not an object'
                                    % type(payload).__name__)
    project_id = payload.get('resource_info')
    if not isinstance(project_id, str) or not project_id:
        raise MalformedNotification('its resource_info is %r, not a '
                                    'project id' % (project_id,))
    if len(project_id) > api.MAX_PROJECT_ID_LENGTH:
        raise MalformedNotification(
            'its resource_info has %d characters, more than a project id '
            '(%d)' % (len(project_id), api.MAX_PROJECT_ID_LENGTH))
    return project_id


class ProjectDeletedEndpoint:
    """The notification endpoint: hands each deleted project to the
    ``manager.ProjectCleanup``.

    :param cleanup: a ``worker.keystone_listener.manager.ProjectCleanup``.
    :param sleep: waits before a requeue (a parameter for the tests).
    """

    filter_rule = oslo_messaging.NotificationFilter(
        event_type='^%s$' % PROJECT_DELETED.replace('.', r'\.'))

    def __init__(self, cleanup, sleep=time.sleep):
        self._cleanup = cleanup
        self._sleep = sleep

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        """Handle one notification; HANDLED, or REQUEUE when the work
        could not be done now (it is idempotent: done again later)."""
        message_id = (metadata.get('message_id')
                      if isinstance(metadata, dict) else None)
        try:
            project_id = project_of(payload)
        except MalformedNotification as exc:
            LOG.warning('Ignored the %s notification %s from %s: %s',
                        event_type, message_id, publisher_id, exc)
            return oslo_messaging.NotificationResult.HANDLED
        try:
            done = self._cleanup.project_deleted(project_id)
        except api.InvalidRequest as exc:
            LOG.warning('Ignored the %s notification %s from %s: %s',
                        event_type, message_id, publisher_id, exc)
            return oslo_messaging.NotificationResult.HANDLED
        except Exception:
            LOG.exception('Could not end the work of deleted project %s; '
                          'the notification goes back to the queue',
                          project_id)
            self._sleep(REQUEUE_DELAY_SECONDS)
            return oslo_messaging.NotificationResult.REQUEUE
        LOG.info('Project %s was deleted in Keystone: cancelled %d '
                 'pending orders, deleted %d schedules', project_id,
                 done.orders_cancelled, done.schedules_deleted)
        return oslo_messaging.NotificationResult.HANDLED
