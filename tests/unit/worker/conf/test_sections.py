"""``worker.conf.sections``: the sections no option group reads."""

from oslo_config import cfg

from worker import conf as worker_conf
from worker.conf import resources
from worker.conf import sections


def _conf(tmp_path, text):
    path = tmp_path / 'sections.conf'
    path.write_text(text)
    conf = cfg.ConfigOpts()
    worker_conf.register_opts(conf)
    conf(['--config-file', str(path)], project='barbican-retry',
         default_config_files=[])
    resources.register_found(conf)
    return conf


def test_each_unknown_section_is_named_with_why(tmp_path):
    conf = _conf(tmp_path, '[step:nosuch.step]\nmax_attempts = 3\n'
                           '[step:certificate.process_type_order]\n'
                           '[step:certificate.nosuch]\n'
                           '[order_type:fanout]\n[order_type:fan_out]\n'
                           '[resource:ca]\n[resource:ca:letsencrypt]\n'
                           '[resource:]\n[worker]\n')
    found = dict(sections.unknown(conf))
    assert sorted(found) == ['order_type:fan_out', 'resource:',
                             'resource:ca:letsencrypt',
                             'step:certificate.nosuch', 'step:nosuch.step']
    assert found['step:nosuch.step'].startswith(
        'no order type nosuch is installed (installed: certificate, ')
    assert found['step:certificate.nosuch'] == (
        'order type certificate has no step nosuch (its steps: '
        'process_type_order, check_certificate_status)')


def test_known_sections_are_no_warning(tmp_path, caplog):
    conf = _conf(tmp_path, '[step:certificate.check_certificate_status]\n'
                           'max_attempts = 3\n[resource:ca]\ncapacity = 2\n')
    sections.warn_unknown(conf)
    assert sections.unknown(conf) == []
    assert 'is ignored' not in caplog.text
