"""The normalisation every probe applies to both backends' answers before comparing them. Each mask names what it
hides; nothing else is touched:

- `Took N seconds` (wall time) -> `Took N seconds`;
- the exact strings of `Backend.masks()` (cluster keys, znode parents, server names: ports and start codes) and
  the server names' host (`localhost` on realhbase, `127.0.0.1` on minihbase) -> placeholders;
- in `status 'replication'`: instants and ages (`TimeStampStarted`, `TimeStampOfLastShippedOp`,
  `TimeStampOfNextToReplicate`, `TimeStampsOfLastAppliedOp`, `AgeOfLastShippedOp`, `AgeOfLastAppliedOp`,
  `Replication Lag`) and the HBase version line (listed difference `version`); server blocks sorted (their
  order is a Java hash set's);
- in describe/list output nothing but the above.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

PROMPT = re.compile(r"^hbase:(\d{3}):0> ?(.*)$")
TOOK_LINE = re.compile(r"^Took \d+\.\d+ seconds$")


@dataclass
class StatementOutput:
    statement: str
    echo: str | None  # the real shell's `hbase:NNN:0> statement` line (listed difference `shell-echo`)
    body: list[str]  # what the statement printed, `Took` excluded
    returned: str | None  # the real shell's `=> ...` line (listed difference `shell-echo`)


def split_statements(stdout: str, statements: list[str]) -> tuple[list[StatementOutput], str]:
    """Each statement's output (up to and including its `Took` line) and what follows the last one.

    realhbase's 2.4.17 shell echoes `hbase:NNN:0> <statement>` before each statement and may print `=> value`
    after its `Took`; minihbase prints neither. Both end every statement with `Took N seconds`, a failing one
    included."""
    lines = stdout.split("\n")
    out: list[StatementOutput] = []
    i = 0
    for statement in statements:
        echo = None
        if i < len(lines) and PROMPT.match(lines[i]):
            echo, i = lines[i], i + 1
        body = []
        while i < len(lines) and not TOOK_LINE.match(lines[i]):
            body.append(lines[i])
            i += 1
        if i >= len(lines):
            out.append(StatementOutput(statement, echo, body, None))
            return out, ""
        i += 1  # the Took line
        returned = None
        if i < len(lines) and lines[i].startswith("=> "):
            returned, i = lines[i], i + 1
        out.append(StatementOutput(statement, echo, body, returned))
    return out, "\n".join(lines[i:])


def mask(text: str, masks: dict[str, str], host: str) -> str:
    for actual in sorted(masks, key=len, reverse=True):
        text = text.replace(actual, masks[actual])
    return re.sub(rf"(?<![\w.]){re.escape(host)}(?![\w.])", "<host>", text)


STATUS_MASKS = [
    (re.compile(r"^version \S+$", re.M), "version <hbase version>"),
    (re.compile(r"TimeStampStarted=\d+"), "TimeStampStarted=<ms>"),
    (re.compile(r"(TimeStampOfLastShippedOp|TimeStampOfNextToReplicate|TimeStampsOfLastAppliedOp)="
                r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \w+ \d{4}"), r"\1=<date>"),
    (re.compile(r"(AgeOfLastShippedOp|AgeOfLastAppliedOp|Replication Lag)=\d+"), r"\1=<ms>"),
]


def status_blocks(body: list[str]) -> tuple[list[str], list[tuple[str, ...]]]:
    """`status 'replication'` as (its header lines, its per-server blocks sorted), instants masked."""
    text = "\n".join(body)
    for pattern, replacement in STATUS_MASKS:
        text = pattern.sub(replacement, text)
    header: list[str] = []
    blocks: list[list[str]] = []
    for line in text.split("\n"):
        if re.match(r"^ {4}\S.*:$", line):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
        else:
            header.append(line)
    return header, sorted(tuple(b) for b in blocks)
