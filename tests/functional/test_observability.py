"""What operators watch: the alert rules and the dashboard.

Prometheus's own ``promtool`` checks the rules and runs their unit tests
(``prometheus/rules_test.yml``: for every alert, series that fire it and
series that do not), and checks every query of the dashboard. A running
retry daemon and worker, scraped over HTTP, export every metric that the
rules and the dashboard name.
"""

import copy
import json
import os
import re
import subprocess
import time

from prometheus_client import parser
import pytest
import yaml

from tests.functional import processes

ETC = os.path.join(processes.REPO_ROOT, 'etc')
RULES = os.path.join(ETC, 'prometheus', 'barbican-retry-rules.yml')
DASHBOARD = os.path.join(ETC, 'grafana', 'barbican-retry.json')
RULE_TESTS = os.path.join(os.path.dirname(__file__), 'prometheus',
                          'rules_test.yml')

# Our metrics; recorded series (``barbican_retry:…``) are not matched.
_METRIC_NAME = re.compile(r'\bbarbican_retry_[a-z0-9_]+\b')
# Grafana's variables, replaced by values for promtool.
_GRAFANA_VARIABLES = {'$__rate_interval': '5m', '$__interval': '1m',
                      '$__range': '1h'}


def _load_yaml(path):
    with open(path) as stream:
        return yaml.safe_load(stream)


def _rules():
    return [rule for group in _load_yaml(RULES)['groups']
            for rule in group['rules']]


def _alerts():
    return {rule['alert']: rule for rule in _rules() if 'alert' in rule}


def _dashboard_queries():
    with open(DASHBOARD) as stream:
        dashboard = json.load(stream)
    return [(panel['title'], target['expr'])
            for panel in dashboard['panels']
            for target in panel['targets']]


def _promtool(promtool, *args):
    done = subprocess.run([promtool, *args], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_promtool_checks_the_rules(promtool):
    out = _promtool(promtool, 'check', 'rules', RULES)
    assert 'SUCCESS: %d rules found' % len(_rules()) in out


def test_promtool_checks_the_example_scrape_configuration(
        promtool, tmp_path):
    config = _load_yaml(os.path.join(ETC, 'prometheus',
                                     'prometheus.yml.example'))
    assert config['rule_files'] == [
        '/etc/prometheus/barbican-retry-rules.yml']
    config['rule_files'] = [RULES]      # where it is in this checkout
    path = tmp_path / 'prometheus.yml'
    path.write_text(yaml.safe_dump(config))
    _promtool(promtool, 'check', 'config', str(path))
    jobs = {job['job_name'] for job in config['scrape_configs']}
    with open(RULES) as stream:
        assert 'job=~"%s"' % '|'.join(sorted(jobs)) in stream.read()


def test_every_alert_tells_the_operator_what_to_run():
    for name, rule in _alerts().items():
        assert rule['labels']['severity'] in ('critical', 'warning'), name
        annotations = rule['annotations']
        assert annotations['summary'], name
        assert re.search(r'`barbican-retry-(manage|status) [a-z]',
                         annotations['description']), name


def test_every_alert_has_a_case_that_fires_and_one_that_does_not():
    fires, quiet = set(), set()
    for case in _load_yaml(RULE_TESTS)['tests']:
        for check in case['alert_rule_test']:
            (fires if check['exp_alerts'] else quiet).add(check['alertname'])
    assert fires == set(_alerts())
    assert quiet == set(_alerts())


def _with_literal_annotations(cases, alerts):
    """The cases, each expected alert given its rule's literal annotations.

    An annotation with a template (``{{ $value }}``) is spelled out in the
    case itself; the literal ones (the descriptions) are copied here rather
    than written twice.
    """
    cases = copy.deepcopy(cases)
    for case in cases['tests']:
        for check in case['alert_rule_test']:
            rule = alerts[check['alertname']]
            for expected in check['exp_alerts']:
                annotations = expected.setdefault('exp_annotations', {})
                for key, text in rule['annotations'].items():
                    if '{{' not in text:
                        annotations.setdefault(key, text)
                assert set(annotations) == set(rule['annotations']), (
                    '%s: spell out its templated annotations in %s'
                    % (check['alertname'], RULE_TESTS))
    cases['rule_files'] = [RULES]
    return cases


def test_promtool_runs_the_rules_unit_tests(promtool, tmp_path):
    path = tmp_path / 'rules_test.yml'
    path.write_text(yaml.safe_dump(_with_literal_annotations(
        _load_yaml(RULE_TESTS), _alerts())))
    out = _promtool(promtool, 'test', 'rules', str(path))
    assert 'SUCCESS' in out


def test_promtool_parses_every_query_of_the_dashboard(promtool, tmp_path):
    queries = _dashboard_queries()
    rules = []
    for index, (title, expr) in enumerate(queries):
        for variable, value in _GRAFANA_VARIABLES.items():
            expr = expr.replace(variable, value)
        assert '$' not in expr, (title, expr)
        rules.append({'record': 'dashboard_query_%d' % index, 'expr': expr})
    path = tmp_path / 'dashboard_rules.yml'
    path.write_text(yaml.safe_dump(
        {'groups': [{'name': 'dashboard', 'rules': rules}]}))
    out = _promtool(promtool, 'check', 'rules', str(path))
    assert 'SUCCESS: %d rules found' % len(queries) in out


def _named_metrics():
    with open(RULES) as stream:
        text = stream.read()
    text += ' '.join(expr for _, expr in _dashboard_queries())
    return set(_METRIC_NAME.findall(text))


def _exported(port):
    text = processes.scrape(port)
    return {sample.name
            for family in parser.text_string_to_metric_families(text)
            for sample in family.samples}


@pytest.mark.parametrize('backend', ['sqlite'])
def test_a_running_daemon_and_worker_export_every_metric_named(
        deployment, backend):
    scheduler_port = processes.free_port()
    worker_port = processes.free_port()
    cluster = deployment({
        'DEFAULT': {'service_down_time': 3, 'report_interval': 1},
        'scheduler': {'schedule_period_seconds': 1},
        'worker': {'workers': 1},
        'metrics': {'enabled': 'true', 'scheduler_port': scheduler_port,
                    'worker_port': worker_port}})
    workers = cluster.start('barbican-worker', 'worker')
    retry = cluster.start('barbican-retry', 'retry')
    workers.wait_for_log('serving topic')
    retry.wait_for_log('Retry scheduler started')
    named = _named_metrics()
    # Before any order: every series is there from the start, at 0.
    missing = named
    deadline = time.monotonic() + 30
    while missing and time.monotonic() < deadline:
        time.sleep(0.5)
        missing = named - _exported(scheduler_port) - _exported(worker_port)
    assert not missing
    assert {'barbican_retry_services_alive',
            'barbican_retry_last_pass_timestamp_seconds',
            'barbican_retry_worker_steps_total'} <= named
    assert workers.stop() == 0 and retry.stop() == 0
