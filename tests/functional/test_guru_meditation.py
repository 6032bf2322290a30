"""Guru Meditation Reports of a running worker pool and retry daemon.

A report is about a process, not about the database: these run on
SQLite only.
"""

import os
import re
import signal
import time

import pytest

from tests.functional import processes
from tests.functional import workflows


def _reports(directory, name, topic):
    """``{file name: text}`` of the reports in ``directory`` whose file
    names start with ``name``, once written up to their configuration's
    last group (``[worker]``, whose ``topic`` is last but two)."""
    found = {}
    for entry in sorted(os.listdir(directory)):
        if entry.startswith(name + '_gurumeditation_'):
            with open(os.path.join(directory, entry)) as report:
                text = report.read()
            if 'topic = %s' % topic in text:
                found[entry] = text
    return found


def _sections(text):
    """``{title: text}`` of a report's sections (oslo.reports' banners
    ``====  Title  ====``)."""
    parts = re.split(r'^====\s+(.+?)\s+====$', text, flags=re.M)
    return {title: body.strip('=\n') for title, body in
            zip(parts[1::2], parts[2::2])}


@pytest.mark.parametrize('backend', ['sqlite'])
def test_sigusr2_makes_one_pool_process_write_its_report(
        deployment, backend, tmp_path):
    directory = tmp_path / 'reports'
    directory.mkdir()
    cluster = deployment(workflows.options({
        'worker': {'workers': 2},
        'oslo_reports': {'log_dir': directory}}))
    workers, _ = workflows.start(cluster, count=2)
    first, second = sorted(workers.children())

    os.kill(first, signal.SIGUSR2)
    name = 'barbican-worker.%d' % first
    [text] = processes.wait_for(
        lambda: list(_reports(directory, name, cluster.topic).values()),
        30, 'the report of %s' % name)
    sections = _sections(text)
    # Its threads: the RPC server's consumer and the timers among them.
    threads = sections['Threads']
    assert threads.count('Thread #') >= 3
    assert 'impl_rabbit.py' in threads and 'in consume' in threads
    assert 'Process %d ' % first in sections['Processes']
    # Its configuration, as it runs, secrets hidden.
    configuration = sections['Configuration']
    assert 'workers = 2' in configuration
    assert 'transport_url = ***' in configuration
    # The signal went to one process: it answered alone, and goes on.
    assert sorted(os.listdir(directory)) == list(
        _reports(directory, name, cluster.topic))
    assert workers.process.poll() is None
    assert sorted(workers.children()) == [first, second]


@pytest.mark.parametrize('backend', ['sqlite'])
def test_the_trigger_file_makes_every_process_write_its_report(
        deployment, backend, tmp_path):
    directory = tmp_path / 'reports'
    directory.mkdir()
    trigger = tmp_path / 'trigger'
    trigger.write_text('')
    cluster = deployment(workflows.options({
        'worker': {'workers': 2},
        'oslo_reports': {'log_dir': directory,
                         'file_event_handler': trigger,
                         'file_event_handler_interval': 1}}))
    workers, retry = workflows.start(cluster, count=2)
    pids = [workers.process.pid] + workers.children() + [retry.process.pid]
    names = ['barbican-worker.%d' % pid for pid in pids[:-1]] + [
        'barbican-retry.%d' % pids[-1]]

    # oslo.reports compares the file's time with the time it started.
    later = time.time() + 1
    os.utime(trigger, (later, later))
    processes.wait_for(
        lambda: all(_reports(directory, name, cluster.topic)
                    for name in names), 30,
        'a report of each of %s' % ', '.join(names))
    for name in names:
        [text] = _reports(directory, name, cluster.topic).values()
        assert 'Threads' in _sections(text)


def _report_of(directory, name, topic):
    """Wait (by the report appearing) for the report of ``name``."""
    [text] = processes.wait_for(
        lambda: list(_reports(directory, name, topic).values()), 30,
        'the report of %s' % name)
    return text


@pytest.mark.parametrize('backend', ['sqlite'])
def test_sigusr2_alone_makes_every_daemon_write_its_report(
        deployment, backend, tmp_path):
    """barbican-retry waits for signals in sigwait: a SIGUSR2 had to wait
    there for a later SIGHUP or SIGTERM before its report was written."""
    directory = tmp_path / 'reports'
    directory.mkdir()
    cluster = deployment(workflows.options({
        'worker': {'workers': 2},
        'oslo_reports': {'log_dir': directory}}))
    workers, retry = workflows.start(cluster, count=2)
    pids = {'barbican-retry': [retry.process.pid],
            'barbican-worker': [workers.process.pid] + workers.children()}
    for script, script_pids in pids.items():
        for pid in script_pids:
            os.kill(pid, signal.SIGUSR2)
            name = '%s.%d' % (script, pid)
            text = _report_of(directory, name, cluster.topic)
            assert 'Process %d ' % pid in _sections(text)['Processes']
    # Each answered alone, and goes on.
    assert retry.process.poll() is None and workers.process.poll() is None
    assert len(os.listdir(directory)) == 4
