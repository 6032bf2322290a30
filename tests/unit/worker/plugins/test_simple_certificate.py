"""Plugins are pure and loaded by entry point."""

import types

from tests import config
from worker import plugins
from worker.plugins import base
from worker.plugins import simple_certificate


def _view(meta=None, attempt=0):
    return base.OrderView(id='o-1', type='certificate', attempt=attempt,
                          meta=types.MappingProxyType(meta or {}))


def test_simple_plugin_asks_to_check_status_after_the_delay():
    plugin = simple_certificate.SimpleCertificatePlugin(7)
    assert plugin.issue_certificate_request(_view()) == base.RetryLater(
        7, method='check_certificate_status')
    result = plugin.check_certificate_status(_view())
    assert isinstance(result, base.Completed)


def test_simple_plugin_can_simulate_an_unavailable_ca():
    plugin = simple_certificate.SimpleCertificatePlugin(7)
    meta = {'unavailable_attempts': 2}
    for attempt in (0, 1):
        assert isinstance(plugin.issue_certificate_request(
            _view(meta, attempt)), base.RemoteUnavailable)
    assert isinstance(plugin.issue_certificate_request(_view(meta, 2)),
                      base.RetryLater)


def test_plugin_is_loaded_by_name_and_given_its_options():
    conf = config.make_conf(
        **{'simple_certificate.delay_before_update_seconds': 11})
    plugin_class = plugins.load_class('simple_certificate')
    assert plugin_class is simple_certificate.SimpleCertificatePlugin
    plugin = plugins.instantiate(plugin_class, conf)
    assert plugin.delay_before_update_seconds == 11
