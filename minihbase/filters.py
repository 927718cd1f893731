"""HBase's filter language (`ParseFilter`) as Thrift's `TScan.filterString` carries it, and the filters.

Grammar, as HBase parses it: `SKIP`/`WHILE` bind tightest, then `AND`, then `OR`; parentheses group; a simple
filter is `Name(arg, ...)` whose arguments are quoted byte strings (`'it''s'`), integers, booleans, comparison
operators (`<`, `<=`, `=`, `!=`, `>`, `>=`) and comparators (`'binary:x'`, `'binaryprefix:x'`,
`'substring:x'`, `'regexstring:x'`).

Filters see what HBase's ScanQueryMatcher shows them: row keys first, then each column's versions newest first
(already limited to the time range and TTL); the scanner counts versions only over cells a filter includes.
A malformed string raises `JavaIllegalArgument` with HBase's wording.
"""
from __future__ import annotations

import re
import struct
from typing import Callable

from minihbase.cells import Cell
from minihbase.errors import JavaIllegalArgument

INCLUDE, SKIP, NEXT_COL, NEXT_ROW = 0, 1, 2, 3


class Filter:
    reversed = False

    def set_reversed(self, reversed_: bool) -> None:
        self.reversed = reversed_

    def reset(self) -> None:
        """Called before each row."""

    def filter_row_key(self, row: bytes) -> bool:
        """True excludes the row."""
        return False

    def filter_cell(self, cell: Cell) -> int:
        return INCLUDE

    def transform_cell(self, cell: Cell) -> Cell:
        return cell

    def filter_row(self) -> bool:
        """After the row's cells: True excludes the whole row."""
        return False

    def row_done(self) -> None:
        """The row was returned to the client."""

    def filter_all_remaining(self) -> bool:
        return False


class FirstKeyOnlyFilter(Filter):
    def __init__(self):
        self._found = False

    def reset(self):
        self._found = False

    def filter_cell(self, cell):
        if self._found:
            return NEXT_ROW
        self._found = True
        return INCLUDE


class KeyOnlyFilter(Filter):
    def __init__(self, len_as_value: bool = False):
        self.len_as_value = len_as_value

    def transform_cell(self, cell):
        value = struct.pack(">i", len(cell.value)) if self.len_as_value else b""
        return cell._replace(value=value)


class PrefixFilter(Filter):
    def __init__(self, prefix: bytes):
        self.prefix = prefix
        self._passed = False

    def filter_row_key(self, row):
        if row.startswith(self.prefix):
            return False
        head = row[:len(self.prefix)]
        # Rows past the prefix (in scan order) can never match again: HBase ends the scan there.
        if (head > self.prefix) != self.reversed:
            self._passed = True
        return True

    def filter_all_remaining(self):
        return self._passed


class InclusiveStopFilter(Filter):
    def __init__(self, stop: bytes):
        self.stop = stop
        self._done = False

    def filter_row_key(self, row):
        past = row < self.stop if self.reversed else row > self.stop
        if past:
            self._done = True
        return past

    def filter_all_remaining(self):
        return self._done


class ColumnPrefixFilter(Filter):
    def __init__(self, *prefixes: bytes):
        self.prefixes = prefixes

    def filter_cell(self, cell):
        return INCLUDE if any(cell.qualifier.startswith(p) for p in self.prefixes) else SKIP


class ColumnCountGetFilter(Filter):
    def __init__(self, limit: int):
        self.limit = limit
        self._columns: set = set()

    def reset(self):
        self._columns = set()

    def filter_cell(self, cell):
        key = (cell.family, cell.qualifier)
        if key not in self._columns:
            if len(self._columns) >= self.limit:
                return NEXT_ROW
            self._columns.add(key)
        return INCLUDE


class ColumnPaginationFilter(Filter):
    def __init__(self, limit: int, offset: int):
        self.limit, self.offset = limit, offset
        self._seen: list = []

    def reset(self):
        self._seen = []

    def filter_cell(self, cell):
        key = (cell.family, cell.qualifier)
        if not self._seen or self._seen[-1] != key:
            self._seen.append(key)
        index = len(self._seen) - 1
        if index < self.offset:
            return NEXT_COL
        if index >= self.offset + self.limit:
            return NEXT_ROW
        return INCLUDE


class PageFilter(Filter):
    """At most `size` rows, counted per region as in HBase (the client sees up to size x regions)."""

    def __init__(self, size: int):
        self.size = size
        self._rows = 0

    def filter_row(self):
        return self._rows >= self.size

    def row_done(self):
        self._rows += 1

    def filter_all_remaining(self):
        return self._rows >= self.size


class TimestampsFilter(Filter):
    def __init__(self, *timestamps: int):
        self.timestamps = frozenset(timestamps)

    def filter_cell(self, cell):
        return INCLUDE if cell.timestamp in self.timestamps else SKIP


_OPS: dict[bytes, Callable[[int], bool]] = {
    b"<": lambda c: c < 0, b"<=": lambda c: c <= 0, b"=": lambda c: c == 0,
    b"!=": lambda c: c != 0, b">": lambda c: c > 0, b">=": lambda c: c >= 0,
}


def _cmp(a: bytes, b: bytes) -> int:
    return (a > b) - (a < b)


class Comparator:
    """`cmp(actual)` returns the sign of `actual` compared with the comparator's value."""

    def __init__(self, kind: bytes, value: bytes):
        self.kind, self.value = kind, value
        if kind == b"regexstring":
            try:
                self._regex = re.compile(value)
            except re.error as e:
                raise JavaIllegalArgument(f"Invalid regex {value!r}: {e}") from None

    def cmp(self, actual: bytes) -> int:
        if self.kind == b"binary":
            return _cmp(actual, self.value)
        if self.kind == b"binaryprefix":
            return _cmp(actual[:len(self.value)], self.value)
        if self.kind == b"substring":
            return 0 if self.value.lower() in actual.lower() else 1
        return 0 if self._regex.search(actual) else 1


class _CompareFilter(Filter):
    def __init__(self, op: bytes, comparator: Comparator):
        if comparator.kind in (b"substring", b"regexstring") and op not in (b"=", b"!="):
            raise JavaIllegalArgument(
                "A regexstring comparator and substring comparator can only be used with EQUAL and NOT_EQUAL"
            )
        self.test = _OPS[op]
        self.comparator = comparator

    def keep(self, actual: bytes) -> bool:
        return self.test(self.comparator.cmp(actual))


class RowFilter(_CompareFilter):
    def filter_row_key(self, row):
        return not self.keep(row)


class FamilyFilter(_CompareFilter):
    def filter_cell(self, cell):
        return INCLUDE if self.keep(cell.family) else NEXT_COL


class QualifierFilter(_CompareFilter):
    def filter_cell(self, cell):
        return INCLUDE if self.keep(cell.qualifier) else SKIP


class ValueFilter(_CompareFilter):
    def filter_cell(self, cell):
        return INCLUDE if self.keep(cell.value) else SKIP


class SingleColumnValueFilter(_CompareFilter):
    def __init__(self, family, qualifier, op, comparator, filter_if_missing=False, latest_only=True):
        super().__init__(op, comparator)
        self.family, self.qualifier = family, qualifier
        self.filter_if_missing = filter_if_missing
        self._seen = False
        self._matched = False

    def reset(self):
        self._seen = self._matched = False

    def filter_cell(self, cell):
        if cell.family == self.family and cell.qualifier == self.qualifier and not self._seen:
            self._seen = True
            self._matched = self.keep(cell.value)
        return INCLUDE

    def filter_row(self):
        return (not self._matched) if self._seen else self.filter_if_missing


class SkipFilter(Filter):
    """`SKIP f`: a row is dropped entirely if `f` excludes any of its cells."""

    def __init__(self, inner: Filter):
        self.inner = inner
        self._skip = False

    def set_reversed(self, reversed_):
        self.reversed = reversed_
        self.inner.set_reversed(reversed_)

    def reset(self):
        self._skip = False
        self.inner.reset()

    def filter_row_key(self, row):
        return self.inner.filter_row_key(row)

    def filter_cell(self, cell):
        code = self.inner.filter_cell(cell)
        if code != INCLUDE:
            self._skip = True
        return INCLUDE

    def transform_cell(self, cell):
        return self.inner.transform_cell(cell)

    def filter_row(self):
        return self._skip or self.inner.filter_row()


class WhileMatchFilter(Filter):
    """`WHILE f`: the scan ends at the first row or cell `f` excludes."""

    def __init__(self, inner: Filter):
        self.inner = inner
        self._done = False

    def set_reversed(self, reversed_):
        self.reversed = reversed_
        self.inner.set_reversed(reversed_)

    def reset(self):
        self.inner.reset()

    def filter_row_key(self, row):
        excluded = self.inner.filter_row_key(row)
        self._done = self._done or excluded
        return excluded

    def filter_cell(self, cell):
        code = self.inner.filter_cell(cell)
        if code != INCLUDE:
            self._done = True
        return code

    def transform_cell(self, cell):
        return self.inner.transform_cell(cell)

    def filter_row(self):
        excluded = self.inner.filter_row()
        self._done = self._done or excluded
        return excluded

    def row_done(self):
        self.inner.row_done()

    def filter_all_remaining(self):
        return self._done or self.inner.filter_all_remaining()


class FilterList(Filter):
    """`AND` (MUST_PASS_ALL) or `OR` (MUST_PASS_ONE) over sub-filters.

    AND evaluates sub-filters in order and stops at the first that excludes a cell (HBase's result depends on
    the order too, e.g. for FirstKeyOnlyFilter after a ValueFilter).
    """

    def __init__(self, must_pass_all: bool, filters: list[Filter]):
        self.must_pass_all = must_pass_all
        self.filters = filters
        self._included: list[Filter] = []

    def set_reversed(self, reversed_):
        self.reversed = reversed_
        for f in self.filters:
            f.set_reversed(reversed_)

    def reset(self):
        for f in self.filters:
            f.reset()

    def filter_row_key(self, row):
        results = [f.filter_row_key(row) for f in self.filters]
        return any(results) if self.must_pass_all else all(results)

    def filter_cell(self, cell):
        if self.must_pass_all:
            for f in self.filters:
                code = f.filter_cell(cell)
                if code != INCLUDE:
                    return code
            return INCLUDE
        codes = [(f.filter_cell(cell), f) for f in self.filters]
        self._included = [f for code, f in codes if code == INCLUDE]
        return INCLUDE if self._included else min(code for code, _ in codes)

    def transform_cell(self, cell):
        for f in (self.filters if self.must_pass_all else self._included):
            cell = f.transform_cell(cell)
        return cell

    def filter_row(self):
        results = [f.filter_row() for f in self.filters]
        return any(results) if self.must_pass_all else all(results)

    def row_done(self):
        for f in self.filters:
            f.row_done()

    def filter_all_remaining(self):
        results = [f.filter_all_remaining() for f in self.filters]
        return any(results) if self.must_pass_all else all(results)


# ---------------------------------------------------------------------------------------------- parsing

_TOKEN = re.compile(
    rb"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op><=|>=|!=|=|<|>)|(?P<punct>[(),])"
    rb"|(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<num>-?\d+)|(?P<bad>\S))",
    re.S,
)
_KEYWORDS = {b"AND", b"OR", b"SKIP", b"WHILE"}


def _tokenize(text: bytes) -> list[tuple[str, bytes]]:
    tokens = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.lastgroup == "bad":
            raise JavaIllegalArgument("Incorrect Filter String")
        pos = m.end()
        kind = m.lastgroup
        value = m.group(kind)
        if kind == "str":
            value = value[1:-1].replace(b"''", b"'")
        elif kind == "word" and value in _KEYWORDS:
            kind = "kw"
        tokens.append((kind, value))
    return tokens


def _comparator(arg: tuple[str, bytes]) -> Comparator:
    kind, value = arg
    if kind != "str" or b":" not in value:
        raise JavaIllegalArgument("Incorrect comparator")
    ctype, _, cvalue = value.partition(b":")
    if ctype not in (b"binary", b"binaryprefix", b"substring", b"regexstring"):
        raise JavaIllegalArgument("Incorrect comparatorType")
    return Comparator(ctype, cvalue)


def _expect(args, n: int) -> None:
    if len(args) != n:
        raise JavaIllegalArgument(f"Expected {n} but got {len(args)}")


def _bytes_arg(arg) -> bytes:
    kind, value = arg
    if kind != "str":
        raise JavaIllegalArgument(f"{value.decode('latin-1')} is not a quoted byte string")
    return value


def _int_arg(arg) -> int:
    kind, value = arg
    if kind != "num":
        raise JavaIllegalArgument(f"{value.decode('latin-1')} is not an integer")
    return int(value)


def _bool_arg(arg) -> bool:
    kind, value = arg
    if kind != "word" or value.lower() not in (b"true", b"false"):
        raise JavaIllegalArgument(f"Incorrect Boolean Expression {value.decode('latin-1')}")
    return value.lower() == b"true"


def _op_arg(arg) -> bytes:
    kind, value = arg
    if kind != "op":
        raise JavaIllegalArgument("Invalid compare operator")
    return value


def _build(name: bytes, args: list) -> Filter:
    if name == b"FirstKeyOnlyFilter":
        _expect(args, 0)
        return FirstKeyOnlyFilter()
    if name == b"KeyOnlyFilter":
        if len(args) > 1:
            raise JavaIllegalArgument(f"Expected: 0 or 1 but got: {len(args)}")
        return KeyOnlyFilter(_bool_arg(args[0]) if args else False)
    if name == b"PrefixFilter":
        _expect(args, 1)
        return PrefixFilter(_bytes_arg(args[0]))
    if name == b"InclusiveStopFilter":
        _expect(args, 1)
        return InclusiveStopFilter(_bytes_arg(args[0]))
    if name == b"ColumnPrefixFilter":
        _expect(args, 1)
        return ColumnPrefixFilter(_bytes_arg(args[0]))
    if name == b"MultipleColumnPrefixFilter":
        return ColumnPrefixFilter(*[_bytes_arg(a) for a in args])
    if name == b"ColumnCountGetFilter":
        _expect(args, 1)
        return ColumnCountGetFilter(_int_arg(args[0]))
    if name == b"ColumnPaginationFilter":
        _expect(args, 2)
        return ColumnPaginationFilter(_int_arg(args[0]), _int_arg(args[1]))
    if name == b"PageFilter":
        _expect(args, 1)
        return PageFilter(_int_arg(args[0]))
    if name == b"TimestampsFilter":
        return TimestampsFilter(*[_int_arg(a) for a in args])
    compare = {b"RowFilter": RowFilter, b"FamilyFilter": FamilyFilter,
               b"QualifierFilter": QualifierFilter, b"ValueFilter": ValueFilter}
    if name in compare:
        _expect(args, 2)
        return compare[name](_op_arg(args[0]), _comparator(args[1]))
    if name == b"SingleColumnValueFilter":
        if len(args) not in (4, 6):
            raise JavaIllegalArgument(f"Expected 4 or 6 but got: {len(args)}")
        extra = (_bool_arg(args[4]), _bool_arg(args[5])) if len(args) == 6 else ()
        return SingleColumnValueFilter(_bytes_arg(args[0]), _bytes_arg(args[1]), _op_arg(args[2]),
                                       _comparator(args[3]), *extra)
    raise JavaIllegalArgument(f"Filter Name {name.decode('latin-1')} not supported")


class _Parser:
    def __init__(self, tokens):
        self.tokens = tokens
        self.pos = 0

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else (None, None)

    def take(self):
        token = self.peek()
        if token[0] is None:
            raise JavaIllegalArgument("Incorrect Filter String")
        self.pos += 1
        return token

    def parse(self) -> Filter:
        f = self.or_expr()
        if self.pos != len(self.tokens):
            raise JavaIllegalArgument("Incorrect Filter String")
        return f

    def or_expr(self):
        parts = [self.and_expr()]
        while self.peek() == ("kw", b"OR"):
            self.take()
            parts.append(self.and_expr())
        return parts[0] if len(parts) == 1 else FilterList(False, parts)

    def and_expr(self):
        parts = [self.unary()]
        while self.peek() == ("kw", b"AND"):
            self.take()
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else FilterList(True, parts)

    def unary(self):
        kind, value = self.take()
        if kind == "kw" and value == b"SKIP":
            return SkipFilter(self.unary())
        if kind == "kw" and value == b"WHILE":
            return WhileMatchFilter(self.unary())
        if kind == "punct" and value == b"(":
            inner = self.or_expr()
            if self.take() != ("punct", b")"):
                raise JavaIllegalArgument("Incorrect Filter String")
            return inner
        if kind != "word":
            raise JavaIllegalArgument("Incorrect Filter String")
        if self.take() != ("punct", b"("):
            raise JavaIllegalArgument("Incorrect Filter String")
        args = []
        if self.peek() == ("punct", b")"):
            self.take()
        else:
            while True:
                arg = self.take()
                if arg[0] in ("punct", "kw"):
                    raise JavaIllegalArgument("Incorrect Filter String")
                args.append(arg)
                sep = self.take()
                if sep == ("punct", b")"):
                    break
                if sep != ("punct", b","):
                    raise JavaIllegalArgument("Incorrect Filter String")
        return _build(value, args)


def parse_filter(text: bytes | str) -> Filter:
    """Parse a filter string; raises `JavaIllegalArgument` (HBase's wording) on anything malformed."""
    if isinstance(text, str):
        text = text.encode("utf-8")
    tokens = _tokenize(text)
    if not tokens:
        raise JavaIllegalArgument("Incorrect Filter String")
    return _Parser(tokens).parse()
