"""The certificate order type translates its plugin's answers into steps."""

import types

import pytest

from tests import config
from worker.order_types import certificate
from worker.plugins import base as results

DELAY = 7.0


class FakePlugin(results.CertificatePluginBase):
    """Answers what it is told to and records the views it was given."""

    def __init__(self, issue=None, status=None):
        self.issue = issue
        self.status = status
        self.views = []

    def issue_certificate_request(self, order):
        self.views.append(('issue', order))
        return self.issue

    def check_certificate_status(self, order):
        self.views.append(('status', order))
        return self.status


VIEW = results.OrderView(id='o-1', type='certificate',
                         meta=types.MappingProxyType({'cn': 'example.org'}))


def _issue(answer):
    plugin = FakePlugin(issue=answer)
    result = certificate.CertificateOrder(plugin).run('process_type_order',
                                                      VIEW)
    assert plugin.views == [('issue', VIEW)]
    return result


def _status(answer):
    plugin = FakePlugin(status=answer)
    result = certificate.CertificateOrder(plugin).run(
        'check_certificate_status', VIEW)
    assert plugin.views == [('status', VIEW)]
    return result


def test_issued_then_check_status_completes_the_request_after_the_delay():
    answer = results.RetryLater(DELAY, method='check_certificate_status')
    assert _issue(answer) == results.Completed(then_after_seconds=DELAY)


@pytest.mark.parametrize('method', [None, 'process_type_order'])
def test_asking_to_issue_again_polls_the_request_step(method):
    assert _issue(results.RetryLater(DELAY, method=method)) == \
        results.RetryLater(DELAY)


def test_asking_for_an_unknown_step_fails_the_order():
    result = _issue(results.RetryLater(DELAY, method='delete_everything'))
    assert isinstance(result, results.Failed)
    assert "'delete_everything'" in result.reason


def test_a_certificate_issued_at_once_needs_no_status_check():
    plugin = FakePlugin(issue=results.Completed({'certificate': 'pem'}),
                        status=results.Failed('must not be asked'))
    order_type = certificate.CertificateOrder(plugin)
    issued = order_type.process_type_order(VIEW)
    assert issued.meta['certificate'] == 'pem'
    checked = order_type.check_certificate_status(results.OrderView(
        id='o-1', type='certificate',
        meta=types.MappingProxyType(dict(VIEW.meta, **issued.meta))))
    assert checked == results.Completed()
    assert [view[0] for view in plugin.views] == ['issue']


@pytest.mark.parametrize('answer', [
    results.Failed('refused by the CA'),
    results.RemoteUnavailable('CA down', retry_after_seconds=30),
])
def test_other_answers_to_issue_pass_through(answer):
    assert _issue(answer) == answer


@pytest.mark.parametrize('answer', [
    results.Completed({'certificate': 'pem'}),
    results.Failed('revoked'),
    results.RemoteUnavailable('CA down'),
    results.RetryLater(DELAY),
    results.RetryLater(DELAY, method='check_certificate_status'),
])
def test_status_answers_pass_through(answer):
    assert _status(answer) == answer


def test_status_asking_for_another_step_fails_the_order():
    result = _status(results.RetryLater(DELAY, method='process_type_order'))
    assert isinstance(result, results.Failed)
    assert "'process_type_order'" in result.reason


def test_build_wraps_the_configured_plugin_with_its_options():
    conf = config.make_conf(
        **{'worker.certificate_plugin': 'simple_certificate',
           'simple_certificate.delay_before_update_seconds': 11})
    order = certificate.CertificateOrder.build(conf)
    # The simple plugin says "issued, check after its delay".
    assert order.run('process_type_order', VIEW) == results.Completed(
        then_after_seconds=11)
