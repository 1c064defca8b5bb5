"""What a CloudWatch Metrics Insights query names: its metric, its namespace, the label keys of its SCHEMA,
and the labels its WHERE clause fixes to one value (issue #35).

Why the explainer reads queries: the stack cannot list the GSIs of a table it does not own at synth time, so
for such a table one alarm per metric watches every GSI at once through a query
(``infra.throttle_alarms.insights_query``):
``SELECT SUM(<metric>) FROM SCHEMA("AWS/DynamoDB", GlobalSecondaryIndexName, TableName) WHERE TableName = '<table>'``.
Its Lambda action's event carries that query as a metric entry's ``expression``, with no ``metricStat`` and
no dimensions: the table is named only in the query text.

The grammar (CloudWatch user guide, "Metrics Insights query components and syntax")::

    SELECT FUNCTION(metricName)
    FROM namespace | SCHEMA(namespace, labelKey, ...)
    [ WHERE labelKey OPERATOR labelValue [AND ...] ]
    [ GROUP BY labelKey [, ...] ] [ ORDER BY FUNCTION() [DESC | ASC] ] [ LIMIT number ]

"None of the keywords are case sensitive, but the identifiers such as the names of metrics, namespaces, and
dimensions are case sensitive." Label values are always in single quotes; namespaces, metric names and label
keys are in double quotes when they hold anything but letters, digits and underscores (and may be quoted
anyway), a quote inside either escaped with a backslash. The WHERE operators documented are ``=``, ``!=``
and ``AND``. Only ``key = 'value'`` fixes a label: any other condition (``!=``, and ``IN`` or ``LIKE``
should a query use them) narrows the match without naming one value, so it is kept as read but fixes
nothing. A WHERE clause with ``OR`` or parentheses is refused: which single value it fixes cannot be told
without evaluating it. GROUP BY, ORDER BY and LIMIT do not change which metrics match and are not read.

Pure text in, a value out: no I/O, nothing at import but the token pattern.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

FUNCTIONS = ("AVG", "COUNT", "MAX", "MIN", "SUM")
# The clauses after WHERE, each starting with its keyword.
_TRAILING = ("GROUP", "ORDER", "LIMIT")
_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
    | (?P<quoted>"(?:[^"\\]|\\.)*")      # a namespace, metric name or label key in double quotes
    | (?P<string>'(?:[^'\\]|\\.)*')      # a label value
    | (?P<word>[A-Za-z0-9_]+)            # a keyword, or an unquoted identifier
    | (?P<op>!=|<>|<=|>=|[=<>(),*])
    """,
    re.VERBOSE,
)
_ESCAPED = re.compile(r"\\(.)")
_SELECT = re.compile(r"\s*SELECT\b", re.IGNORECASE)


class UnreadableQuery(ValueError):
    """The text is not a Metrics Insights query this module can read; the message says why, in one line."""


@dataclass(frozen=True)
class Query:
    """A parsed query: ``schema`` None for ``FROM namespace`` (any dimensions match), else the SCHEMA's label
    keys (only metrics with exactly those dimensions match); ``fixed``: each label key a ``key = 'value'``
    condition ties to one value."""

    function: str
    metric: str
    namespace: str
    schema: tuple[str, ...] | None
    fixed: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Token:
    kind: str  # word | quoted | string | op
    text: str  # quotes removed and escapes undone for quoted and string

    def is_keyword(self, *keywords: str) -> bool:
        # A quoted identifier is never a keyword: quoting is how a query names a metric called LIMIT.
        return self.kind == "word" and self.text.upper() in keywords

    def is_op(self, op: str) -> bool:
        return self.kind == "op" and self.text == op


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while position < len(text):
        found = _TOKEN.match(text, position)
        if found is None:
            shown = text[position : position + 12]
            what = "an unterminated quote" if shown[:1] in "\"'" else f"unexpected text {shown!r}"
            raise UnreadableQuery(f"{what} at character {position + 1}")
        position = found.end()
        kind = found.lastgroup or "space"
        if kind == "space":
            continue
        value = found.group()
        if kind in ("quoted", "string"):
            value = _ESCAPED.sub(r"\1", value[1:-1])
        tokens.append(_Token(kind, value))
    return tokens


class _Cursor:
    def __init__(self, tokens: list[_Token]) -> None:
        self._tokens = tokens
        self._at = 0

    @property
    def done(self) -> bool:
        return self._at >= len(self._tokens)

    def peek(self) -> _Token | None:
        return None if self.done else self._tokens[self._at]

    def take(self, expected: str) -> _Token:
        token = self.peek()
        if token is None:
            raise UnreadableQuery(f"it ends where {expected} was expected")
        self._at += 1
        return token

    def keyword(self, keyword: str) -> None:
        token = self.take(keyword)
        if not token.is_keyword(keyword):
            raise UnreadableQuery(f"{keyword} expected, found {token.text!r}")

    def op(self, op: str) -> None:
        token = self.take(f"'{op}'")
        if not token.is_op(op):
            raise UnreadableQuery(f"'{op}' expected, found {token.text!r}")

    def name(self, what: str) -> str:
        token = self.take(what)
        if token.kind not in ("word", "quoted"):
            raise UnreadableQuery(f"{what} expected, found {token.text!r}")
        return token.text

    def at_keyword(self, *keywords: str) -> bool:
        token = self.peek()
        return token is not None and token.is_keyword(*keywords)

    def at_op(self, op: str) -> bool:
        token = self.peek()
        return token is not None and token.is_op(op)


def is_query(expression: str) -> bool:
    """Whether an alarm's ``expression`` is a Metrics Insights query (it starts with SELECT), not metric
    math over the alarm's other metrics (``m1 + m2``, ``SEARCH(...)``)."""
    return _SELECT.match(expression) is not None


def parse_query(text: str) -> Query:
    """The query's parts; ``UnreadableQuery`` (one line why) for anything else."""
    cursor = _Cursor(_tokens(text))
    cursor.keyword("SELECT")
    function = cursor.name("an aggregate function").upper()
    if function not in FUNCTIONS:
        raise UnreadableQuery(f"{function} is not a Metrics Insights function ({', '.join(FUNCTIONS)})")
    cursor.op("(")
    metric = cursor.name("a metric name")
    cursor.op(")")
    cursor.keyword("FROM")
    schema: tuple[str, ...] | None = None
    if cursor.at_keyword("SCHEMA"):
        cursor.take("SCHEMA")
        cursor.op("(")
        namespace = cursor.name("a namespace")
        keys = []
        while cursor.at_op(","):
            cursor.take("','")
            keys.append(cursor.name("a label key"))
        cursor.op(")")
        schema = tuple(keys)
    else:
        namespace = cursor.name("a namespace or SCHEMA(...)")
    fixed: dict[str, str] = {}
    if cursor.at_keyword("WHERE"):
        cursor.take("WHERE")
        fixed = _where(cursor)
    token = cursor.peek()
    if token is not None and not token.is_keyword(*_TRAILING):
        raise UnreadableQuery(f"unexpected {token.text!r} after the FROM clause")
    return Query(function, metric, namespace, schema, fixed)


def _where(cursor: _Cursor) -> dict[str, str]:
    """The labels ``key = 'value'`` conditions fix, from conditions joined by AND."""
    fixed: dict[str, str] = {}
    while True:
        if cursor.at_op("("):
            raise UnreadableQuery("its WHERE clause has parentheses: which one value it fixes cannot be told")
        key = cursor.name("a label key")
        operator = _operator(cursor)
        value = _value(cursor)
        if operator == "=":
            if not isinstance(value, str):
                raise UnreadableQuery(f"its WHERE clause compares {key} with a list using '='")
            if key in fixed and fixed[key] != value:
                raise UnreadableQuery(f"its WHERE clause sets {key} to two values ({fixed[key]!r}, {value!r})")
            fixed[key] = value
        if cursor.at_keyword("OR"):
            raise UnreadableQuery("its WHERE clause joins conditions with OR: which one value it fixes cannot be told")
        if not cursor.at_keyword("AND"):
            return fixed
        cursor.take("AND")


def _operator(cursor: _Cursor) -> str:
    token = cursor.take("an operator")
    if token.kind == "op" and token.text in ("=", "!=", "<>"):
        return token.text
    if token.is_keyword("NOT"):
        following = cursor.take("IN or LIKE")
        if following.is_keyword("IN", "LIKE"):
            return f"NOT {following.text.upper()}"
    elif token.is_keyword("IN", "LIKE"):
        return token.text.upper()
    raise UnreadableQuery(f"{token.text!r} is not a WHERE operator this reader knows (=, !=, IN, LIKE)")


def _value(cursor: _Cursor) -> str | tuple[str, ...]:
    """A label value in single quotes, or a list of them in parentheses (``IN``)."""
    if cursor.at_op("("):
        cursor.take("'('")
        values = [_string(cursor)]
        while cursor.at_op(","):
            cursor.take("','")
            values.append(_string(cursor))
        cursor.op(")")
        return tuple(values)
    return _string(cursor)


def _string(cursor: _Cursor) -> str:
    token = cursor.take("a label value in single quotes")
    if token.kind != "string":
        raise UnreadableQuery(f"a label value in single quotes expected, found {token.text!r}")
    return token.text
