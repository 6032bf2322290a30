"""``Database`` construction details that need no server."""

import os
import stat

import sqlalchemy as sa

from worker.db import session


def test_a_new_sqlite_file_is_readable_by_its_owner_only(tmp_path):
    path = tmp_path / 'new.sqlite'
    old_umask = os.umask(0o022)
    try:
        database = session.Database.from_url('sqlite:///%s' % path)
        with database.session() as new, new.begin():
            new.execute(sa.text('CREATE TABLE t (x INTEGER)'))
        database.dispose()
    finally:
        os.umask(old_umask)
    for name in os.listdir(tmp_path):     # the -wal and -shm files too
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o600, name


def test_an_existing_sqlite_file_keeps_its_mode(tmp_path):
    path = tmp_path / 'shared.sqlite'
    path.touch(mode=0o640)
    os.chmod(path, 0o640)
    database = session.Database.from_url('sqlite:///%s' % path)
    with database.session() as new, new.begin():
        new.execute(sa.text('CREATE TABLE t (x INTEGER)'))
    database.dispose()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
