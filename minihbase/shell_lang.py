"""The Ruby subset `hbase shell` statements are written in: `command arg, arg, KEY => value, ...`.

Values: single- and double-quoted strings (double quotes with Ruby's escapes, `\\xNN` giving raw bytes for
binary row keys; `#{}` interpolation is refused), integers, floats, true/false/nil, arrays, hashes
(`{"t1" => [], "t2" => ["cf1"]}`), and the shell's constants (`NAME`, `VERSIONS`, `SPLITS`, ... which are
strings equal to their names). Trailing `KEY => value` pairs form one implicit hash, as in Ruby. A statement
ends at a newline (or `;`) unless a bracket is open or the line ends with `,` or `=>`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator


class RubySyntaxError(Exception):
    """Answered as HBase's shell answers a SyntaxError."""


class RStr(str):
    """A Ruby string: text for names (UTF-8, undecodable bytes kept as surrogates) plus its exact bytes."""

    raw: bytes

    def __new__(cls, raw: bytes) -> "RStr":
        obj = super().__new__(cls, raw.decode("utf-8", "surrogateescape"))
        obj.raw = raw
        return obj


@dataclass(frozen=True)
class Token:
    kind: str  # str, int, float, ident, punct, newline
    value: Any
    line: int


@dataclass
class Statement:
    command: str
    args: list
    text: str
    line: int


_PUNCT = ("=>", ",", "[", "]", "{", "}", "(", ")", ";", ":", "+")
_SIMPLE_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "s": b" ", "e": b"\x1b", "a": b"\x07",
                   "b": b"\x08", "f": b"\x0c", "v": b"\x0b"}
_NUMBER = re.compile(r"-?\d[\d_]*(\.\d+)?")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*[?!]?")


def _double_quoted(text: str, i: int, line: int) -> tuple[bytes, int]:
    out = bytearray()
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            return bytes(out), i + 1
        if ch == "#" and i + 1 < n and text[i + 1] == "{":
            raise RubySyntaxError(f"line {line}: string interpolation #{{...}} is not supported")
        if ch != "\\":
            out += ch.encode("utf-8")
            i += 1
            continue
        i += 1
        if i >= n:
            break
        esc = text[i]
        if esc == "x":
            m = re.match(r"[0-9A-Fa-f]{1,2}", text[i + 1:i + 3])
            if not m:
                raise RubySyntaxError(f"line {line}: invalid hex escape")
            out.append(int(m.group(0), 16))
            i += 1 + len(m.group(0))
        elif esc == "u":
            if text[i + 1:i + 2] == "{":
                end = text.find("}", i)
                if end < 0:
                    raise RubySyntaxError(f"line {line}: unterminated Unicode escape")
                for cp in text[i + 2:end].split():
                    out += chr(int(cp, 16)).encode("utf-8")
                i = end + 1
            else:
                m = re.match(r"[0-9A-Fa-f]{4}", text[i + 1:i + 5])
                if not m:
                    raise RubySyntaxError(f"line {line}: invalid Unicode escape")
                out += chr(int(m.group(0), 16)).encode("utf-8")
                i += 5
        elif esc in "01234567":
            digits = re.match(r"[0-7]{1,3}", text[i:i + 3]).group(0)
            out.append(int(digits, 8) & 0xFF)
            i += len(digits)
        elif esc in _SIMPLE_ESCAPES:
            out += _SIMPLE_ESCAPES[esc]
            i += 1
        elif esc == "\n":
            i += 1  # line continuation inside a string
        else:
            out += esc.encode("utf-8")
            i += 1
    raise RubySyntaxError(f"line {line}: unterminated string meets end of file")


def _single_quoted(text: str, i: int, line: int) -> tuple[bytes, int]:
    out = []
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "'":
            return "".join(out).encode("utf-8"), i + 1
        if ch == "\\" and i + 1 < n and text[i + 1] in "\\'":
            out.append(text[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    raise RubySyntaxError(f"line {line}: unterminated string meets end of file")


def tokenize(text: str, line: int = 1) -> list[Token]:
    """`line`: the number of the text's first line (a shell reading its input chunk by chunk counts on)."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            tokens.append(Token("newline", None, line))
            line += 1
            i += 1
        elif ch in " \t\r":
            i += 1
        elif ch == "\\" and text[i + 1:i + 2] == "\n":  # explicit line continuation
            i += 2
            line += 1
        elif ch == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif ch == '"':
            value, end = _double_quoted(text, i + 1, line)
            line += text.count("\n", i, end)
            tokens.append(Token("str", RStr(value), line))
            i = end
        elif ch == "'":
            value, end = _single_quoted(text, i + 1, line)
            line += text.count("\n", i, end)
            tokens.append(Token("str", RStr(value), line))
            i = end
        elif (m := _NUMBER.match(text, i)) and (ch != "-" or not tokens or tokens[-1].kind in ("punct", "newline")):
            literal = m.group(0).replace("_", "")
            tokens.append(Token("float" if "." in literal else "int",
                                float(literal) if "." in literal else int(literal), line))
            i = m.end()
        elif m := _IDENT.match(text, i):
            tokens.append(Token("ident", m.group(0), line))
            i = m.end()
        else:
            for p in _PUNCT:
                if text.startswith(p, i):
                    tokens.append(Token("punct", p, line))
                    i += len(p)
                    break
            else:
                raise RubySyntaxError(f"line {line}: unexpected character {ch!r}")
    tokens.append(Token("newline", None, line))
    return tokens


def _nesting(tok: Token) -> int:
    """+1 for a bracket opened, -1 for one closed."""
    if tok.kind == "punct" and tok.value in ("(", "[", "{"):
        return 1
    return -1 if tok.kind == "punct" and tok.value in (")", "]", "}") else 0


def _continues(tok: Token) -> bool:
    """A line ending with this token goes on on the next (Ruby)."""
    return tok.kind == "punct" and tok.value in (",", "=>", "+")


def split_statements(tokens: list[Token]) -> Iterator[list[Token]]:
    """Group tokens into statements: a newline or `;` ends one unless brackets are open or the previous token
    is `,`, `=>` or `+` (Ruby continues the expression on the next line)."""
    current: list[Token] = []
    depth = 0
    for tok in tokens:
        depth += _nesting(tok)
        if (tok.kind == "newline" or (tok.kind == "punct" and tok.value == ";")) and depth <= 0:
            if current and _continues(current[-1]) and tok.kind == "newline":
                continue
            if current:
                yield current
            current = []
            depth = 0
            continue
        if tok.kind == "newline":
            continue
        current.append(tok)
    if current:
        yield current


class _Parser:
    def __init__(self, tokens: list[Token]):
        self.tokens = tokens
        self.i = 0

    def peek(self) -> Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> Token:
        tok = self.peek()
        if tok is None:
            line = self.tokens[-1].line if self.tokens else 0
            raise RubySyntaxError(f"line {line}: unexpected end of statement")
        self.i += 1
        return tok

    def expect(self, value: str) -> None:
        tok = self.take()
        if tok.kind != "punct" or tok.value != value:
            raise RubySyntaxError(f"line {tok.line}: expected {value!r}, found {_show(tok)}")

    def at(self, value: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "punct" and tok.value == value

    def value(self) -> Any:
        value = self.primary()
        while self.at("+"):  # `"a" + "b"`: Ruby's string concatenation (and integer addition)
            tok = self.take()
            right = self.primary()
            if isinstance(value, RStr) and isinstance(right, RStr):
                value = RStr(value.raw + right.raw)
            elif type(value) is int and type(right) is int:
                value = value + right
            else:
                raise RubySyntaxError(f"line {tok.line}: `+` joins two strings or two integers")
        return value

    def primary(self) -> Any:
        tok = self.take()
        if tok.kind in ("str", "int", "float"):
            return tok.value
        if tok.kind == "ident":
            if tok.value == "true":
                return True
            if tok.value == "false":
                return False
            if tok.value == "nil":
                return None
            if tok.value[0].isupper():
                return RStr(tok.value.encode())  # the shell's constants are their own names
            raise RubySyntaxError(f"line {tok.line}: undefined local variable or method `{tok.value}'")
        if tok.kind == "punct" and tok.value == "[":
            items = []
            while not self.at("]"):
                items.append(self.value())
                if not self.at("]"):
                    self.expect(",")
            self.expect("]")
            return items
        if tok.kind == "punct" and tok.value == "{":
            out: dict = {}
            while not self.at("}"):
                key, value = self.pair()
                out[key] = value
                if not self.at("}"):
                    self.expect(",")
            self.expect("}")
            return out
        raise RubySyntaxError(f"line {tok.line}: unexpected {_show(tok)}")

    def pair(self) -> tuple[Any, Any]:
        tok = self.peek()
        nxt = self.tokens[self.i + 1] if self.i + 1 < len(self.tokens) else None
        if tok is not None and tok.kind == "ident" and nxt is not None and nxt.kind == "punct" and nxt.value == ":":
            self.i += 2  # Ruby 1.9 `key: value` (a symbol key)
            return RStr(tok.value.encode()), self.value()
        key = self.value()
        self.expect("=>")
        return _hashable(key, tok), self.value()

    def arguments(self, closing: str | None) -> list:
        args: list = []
        implicit: dict | None = None
        while self.peek() is not None and not (closing and self.at(closing)):
            start = self.i
            first = self.value()
            if self.at("=>"):
                self.i = start
                key, value = self.pair()
                if implicit is None:
                    implicit = {}
                    args.append(implicit)
                implicit[key] = value
            elif implicit is not None:
                raise RubySyntaxError(f"line {self.tokens[start].line}: a positional argument after KEY => value")
            else:
                args.append(first)
            if self.peek() is not None and not (closing and self.at(closing)):
                self.expect(",")
        return args


def _hashable(key: Any, tok: Token | None) -> Any:
    if isinstance(key, (list, dict)):
        raise RubySyntaxError(f"line {tok.line if tok else 0}: a list or hash as a hash key is not supported")
    return key


def _show(tok: Token) -> str:
    return {"newline": "end of line"}.get(tok.kind, repr(tok.value))


def parse_statement(tokens: list[Token], text: str = "") -> Statement:
    first = tokens[0]
    if first.kind != "ident":
        raise RubySyntaxError(f"line {first.line}: a statement starts with a command name, found {_show(first)}")
    parser = _Parser(tokens)
    parser.i = 1
    if parser.at("("):
        parser.i += 1
        args = parser.arguments(")")
        parser.expect(")")
    else:
        args = parser.arguments(None)
    if parser.peek() is not None:
        raise RubySyntaxError(f"line {parser.peek().line}: unexpected {_show(parser.peek())}")
    return Statement(first.value, args, text, first.line)


def statements(text: str, first_line: int = 1) -> Iterator[Statement]:
    """Statements in order; a syntax error is raised when the bad statement is reached (earlier ones run).
    `first_line`: the number of the text's first line in the whole input."""
    try:
        tokens = tokenize(text, first_line)
    except RubySyntaxError as e:
        # Run what lexes cleanly before the bad line, then fail where Ruby would.
        bad_line = int(re.match(r"line (\d+)", str(e)).group(1)) if re.match(r"line (\d+)", str(e)) else first_line
        good = "\n".join(text.splitlines()[:bad_line - first_line])
        yield from statements(good, first_line) if good.strip() else iter(())
        raise
    lines = text.splitlines()
    for group in split_statements(tokens):
        source = "\n".join(lines[group[0].line - first_line:group[-1].line - first_line + 1])
        yield parse_statement(group, source.strip())


def incomplete(text: str) -> bool:
    """Whether `text` ends inside a statement (a string or a bracket still open, or a last line ending with `,`,
    `=>`, `+` or `\\`): a shell reading line by line, as `hbase shell` does, waits for more before running it."""
    try:
        tokens = tokenize(text)
    except RubySyntaxError as e:
        return "meets end of file" in str(e)
    if text.rstrip(" \t\r\n").endswith("\\"):
        return True
    last = [t for t in tokens if t.kind != "newline"][-1:]
    return sum(map(_nesting, tokens)) > 0 or bool(last and _continues(last[0]))
