"""``worker.keystone_listener.endpoint``: what a Keystone notification
says, and what becomes of one that says nothing usable; no broker."""

import logging
import threading

from oslo_config import cfg
import oslo_messaging
import pytest

from tests import fakes
from worker import api
from worker.keystone_listener import endpoint
from worker.keystone_listener import manager

PROJECT = '5f1c0e2a9b7d4c3e8a6f1b2d3c4e5f60'
HANDLED = oslo_messaging.NotificationResult.HANDLED
REQUEUE = oslo_messaging.NotificationResult.REQUEUE


class RecordingCleanup:
    """A ``ProjectCleanup`` that records the projects, or raises."""

    def __init__(self, error=None):
        self.projects = []
        self.error = error
        self.called = threading.Event()

    def project_deleted(self, project_id):
        self.projects.append(project_id)
        self.called.set()
        if self.error is not None:
            raise self.error
        return manager.Cleanup(project_id, 2, 1)


def _info(the_endpoint, payload, event_type=endpoint.PROJECT_DELETED):
    return the_endpoint.info({}, 'identity.keystone-host', event_type,
                             payload, {'message_id': 'm-1'})


@pytest.mark.parametrize('payload', [
    {'resource_info': PROJECT},
    # Keystone's cadf format carries it too, beside the CADF event.
    {'resource_info': PROJECT, 'typeURI':
     'http://schemas.dmtf.org/cloud/audit/1.0/event',
     'action': 'deleted.project', 'target': {'id': PROJECT}},
])
def test_the_project_of_a_payload_is_its_resource_info(payload):
    assert endpoint.project_of(payload) == PROJECT


@pytest.mark.parametrize('payload, why', [
    (None, 'NoneType, not an object'),
    ('a project', 'str, not an object'),
    ([PROJECT], 'list, not an object'),
    ({}, 'resource_info is None'),
    ({'resource_info': ''}, "resource_info is ''"),
    ({'resource_info': 42}, 'resource_info is 42'),
    ({'resource_info': [PROJECT]}, 'not a project id'),
    ({'resource_info': 'x' * (api.MAX_PROJECT_ID_LENGTH + 1)},
     'more than a project id'),
])
def test_a_payload_without_a_project_is_malformed(payload, why):
    with pytest.raises(endpoint.MalformedNotification, match=why):
        endpoint.project_of(payload)


def test_a_deleted_project_is_cleaned_up_and_acknowledged():
    cleanup = RecordingCleanup()
    with fakes.log_lines(endpoint.__name__) as lines:
        assert _info(endpoint.ProjectDeletedEndpoint(cleanup),
                     {'resource_info': PROJECT}) == HANDLED
    assert cleanup.projects == [PROJECT]
    assert lines.about('cancelled 2 pending orders, deleted 1 schedules')


@pytest.mark.parametrize('payload', [
    None, {}, {'resource_info': 7}, {'resource_info': 'x' * 1000}])
def test_a_malformed_notification_is_logged_and_acknowledged(payload):
    cleanup = RecordingCleanup()
    with fakes.log_lines(endpoint.__name__) as lines:
        assert _info(endpoint.ProjectDeletedEndpoint(cleanup),
                     payload) == HANDLED
    assert cleanup.projects == []
    [(_, level, _, _)] = lines.about(
        'Ignored the identity.project.deleted notification m-1')
    assert level == logging.WARNING


def test_a_project_id_the_api_refuses_is_logged_and_acknowledged():
    cleanup = RecordingCleanup(
        api.InvalidRequest('project_id has control characters'))
    with fakes.log_lines(endpoint.__name__) as lines:
        assert _info(endpoint.ProjectDeletedEndpoint(cleanup),
                     {'resource_info': 'a\x00b'}) == HANDLED
    assert lines.about('control characters')


def test_a_failure_to_clean_up_requeues_after_a_pause():
    cleanup = RecordingCleanup(RuntimeError('database unreachable'))
    slept = []
    the_endpoint = endpoint.ProjectDeletedEndpoint(cleanup,
                                                   sleep=slept.append)
    assert _info(the_endpoint, {'resource_info': PROJECT}) == REQUEUE
    assert slept == [endpoint.REQUEUE_DELAY_SECONDS]


def test_metadata_that_is_not_a_dict_is_no_crash():
    cleanup = RecordingCleanup()
    the_endpoint = endpoint.ProjectDeletedEndpoint(cleanup)
    assert the_endpoint.info({}, 'identity.h', endpoint.PROJECT_DELETED,
                             {}, None) == HANDLED


def test_only_project_deletions_reach_the_cleanup_on_a_listener():
    """Through oslo.messaging's in-memory transport: the filter lets
    identity.project.deleted through, and nothing else."""
    conf = cfg.ConfigOpts()
    conf([])
    transport = oslo_messaging.get_notification_transport(
        conf, url='fake://')
    cleanup = RecordingCleanup()
    # The fake transport's own exchange: Keystone's is the functional
    # tests' (tests/functional/test_keystone_listener.py).
    target = oslo_messaging.Target(topic='notifications')
    listener = oslo_messaging.get_notification_listener(
        transport, [target], [endpoint.ProjectDeletedEndpoint(cleanup)],
        executor='threading', pool='test-pool')
    listener.start()
    try:
        notifier = oslo_messaging.Notifier(
            transport, 'identity.host', driver='messagingv2',
            topics=['notifications'])
        for event_type in ('identity.project.created',
                           'identity.project.updated',
                           'identity.user.deleted'):
            notifier.info({}, event_type, {'resource_info': 'other'})
        notifier.info({}, endpoint.PROJECT_DELETED,
                      {'resource_info': PROJECT})
        assert cleanup.called.wait(10)
    finally:
        listener.stop()
        listener.wait()
        transport.cleanup()
    assert cleanup.projects == [PROJECT]
