"""Turning rows into values that every cliff formatter can print."""

import datetime
import json


def value(item):
    """Return ``item`` as a table, JSON, CSV and YAML friendly value."""
    if isinstance(item, datetime.datetime):
        return item.isoformat(sep=' ', timespec='milliseconds')
    if isinstance(item, dict):
        return json.dumps(item, sort_keys=True)
    return item


def row(obj, columns):
    """Return the displayable values of ``columns`` of ``obj``."""
    return tuple(value(getattr(obj, column)) for column in columns)
