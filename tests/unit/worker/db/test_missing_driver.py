"""A database URL whose driver is not installed names the extra that
installs it (``worker.db.session.MissingDriver``)."""

import sys

import pytest

from worker.db import session as db_session


@pytest.mark.parametrize('url, module, extra', [
    ('mysql+pymysql://u:secret@db/x', 'pymysql', 'mysql'),
    ('postgresql+psycopg2://u:secret@db/x', 'psycopg2', 'postgresql')])
def test_the_message_names_the_module_and_the_extra(monkeypatch, url,
                                                    module, extra):
    # None in sys.modules: "import module" raises ImportError.
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(db_session.MissingDriver) as raised:
        db_session.Database.from_url(url)
    message = str(raised.value)
    assert "pip install 'barbican-retry[%s]'" % extra in message
    assert 'needs the Python module %s' % module in message
    assert 'secret' not in message
