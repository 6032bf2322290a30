"""The gate on an order's metadata: its type's ``meta_schema``.

An order type may declare ``meta_schema``, a JSON Schema (draft 2020-12)
that the metadata of a new order must satisfy. ``validate_meta`` checks it
before anything is written and raises ``InvalidMeta``, whose message names
the failing place as a JSON path and the schema keyword that failed::

    meta is invalid at $.polls: -1 is less than the minimum of 0
    (rule: minimum)

``schema_problem`` is the check each installed type passes at load
(``base.check``): a type whose schema is not valid is refused then, not
when its first order is created.
"""

import functools
import json
import re
import typing

import jsonschema
from jsonschema import exceptions as schema_exceptions

if typing.TYPE_CHECKING:
    from worker.order_types import base

# One draft both to check the schemas at load and to validate metadata, so
# that a schema that loaded compiles and means what its author tested.
VALIDATOR = jsonschema.Draft202012Validator

# A key written ``$.key`` in a JSON path; any other key ``$["k e y"]``.
_PLAIN_KEY = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')


class InvalidMeta(ValueError):
    """An order's metadata does not satisfy its type's ``meta_schema``.

    :ivar path: where, as a JSON path: ``$`` for the whole metadata,
        ``$.polls``, ``$.checks[2]``.
    :ivar rule: the JSON Schema keyword that failed: ``type``,
        ``required``, ``minimum``, ``additionalProperties``...
    :ivar reason: jsonschema's message, e.g. ``'x' is not of type
        'integer'``.
    """

    def __init__(self, path: str, rule: str, reason: str) -> None:
        super().__init__('meta is invalid at %s: %s (rule: %s)'
                         % (path, reason, rule))
        self.path = path
        self.rule = rule
        self.reason = reason


def json_path(parts: typing.Iterable[str | int]) -> str:
    """The JSON path of a place given as keys and indexes from the root."""
    path = '$'
    for part in parts:
        if isinstance(part, int):
            path += '[%d]' % part
        elif _PLAIN_KEY.match(part):
            path += '.' + part
        else:
            path += '[%s]' % json.dumps(part, ensure_ascii=False)
    return path


def schema_problem(schema: object) -> str | None:
    """Why ``schema`` cannot be a type's ``meta_schema``, or None if it can.

    It must be None (no schema) or a dict (a JSON object: the boolean
    schemas ``true`` and ``false`` say nothing worth a schema) that is a
    valid JSON Schema.
    """
    if schema is None:
        return None
    if not isinstance(schema, dict):
        return ('meta_schema must be a dict (a JSON Schema), not %s'
                % type(schema).__name__)
    try:
        VALIDATOR.check_schema(schema)
    except schema_exceptions.SchemaError as exc:
        return ('meta_schema is not a valid JSON Schema at %s: %s'
                % (json_path(exc.absolute_path), exc.message))
    return None


def validate_meta(workflow: 'base.Workflow', meta: object) -> None:
    """Check a new order's metadata against its type's ``meta_schema``.

    Metadata must be a dict (a JSON object) whatever the type; a type with
    no schema accepts any. Of several failures, the one jsonschema's
    ``best_match`` finds most relevant is reported.

    :raises InvalidMeta: the metadata does not satisfy the schema.
    """
    if not isinstance(meta, dict):
        # The words of jsonschema's own "type" failure, so that every
        # refusal reads the same.
        raise InvalidMeta('$', 'type', '%r is not of type %r'
                          % (meta, 'object'))
    if workflow.meta_schema is None:
        return
    error = schema_exceptions.best_match(
        _validator(workflow).iter_errors(meta))
    if error is not None:
        raise InvalidMeta(json_path(error.absolute_path),
                          str(error.validator), error.message)


# Schemas are static: each workflow's is compiled once per process. The
# installed types are few; the bound is for tests that build their own.
@functools.lru_cache(maxsize=64)
def _validator(workflow: 'base.Workflow') -> typing.Any:
    return VALIDATOR(workflow.meta_schema)
