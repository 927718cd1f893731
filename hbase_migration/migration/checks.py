"""What a preflight check returns, and the report of them all (pure).

A check's result is a fact about the clusters (`ok`, or a refusal with its reason and fix); its severity says
whether a refusal fails the run (ERROR), only informs (WARNING) or could not be judged because what it checks is
absent (SKIPPED). A check that could not be made because an endpoint did not answer is `transient`
(`clusters/reachability.py`): a retry may make it, so a report whose every failure is transient is `retryable`,
while a single definite refusal fails the run at once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hbase_migration.clusters.reachability import describe, unreachable

ERROR = "error"
WARNING = "warning"
SKIPPED = "skipped"  # a check that could not be made (what it checks is absent): it neither passes nor fails


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    reason: str
    severity: str = ERROR  # an ERROR that is not ok fails preflight; a WARNING only informs
    fix: str | None = None  # what an operator can run to make it pass
    transient: bool = False  # not made: an endpoint did not answer (a retry may make it)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "severity": self.severity, "reason": self.reason,
                "fix": self.fix, "transient": self.transient}


@dataclass(frozen=True)
class Unlearned:
    """Why a fact could not be learned: the error's text, and whether an endpoint did not answer (transient) or
    answered with an error (itself a fact). Reads as its text wherever a check quotes it."""

    text: str
    transient: bool = False

    def __str__(self) -> str:
        return self.text

    @classmethod
    def of(cls, exc: BaseException) -> "Unlearned":
        return cls(describe(exc), unreachable(exc))


def transient(error: Any) -> bool:
    """Whether a fact's error (an `Unlearned`, or plain text: a fact) says an endpoint did not answer."""
    return bool(getattr(error, "transient", False))


@dataclass(frozen=True)
class PreflightReport:
    results: tuple[CheckResult, ...]
    sizing: Any = None  # sizing_probe.SizingReport when the run was sized
    initial_copy: Any = None  # {table: initial_copy.Decision}: how each table's initial copy is made

    @property
    def ok(self) -> bool:
        return all(r.ok or r.severity != ERROR for r in self.results)

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if not r.ok and r.severity == ERROR]

    @property
    def retryable(self) -> bool:
        """Failed only because endpoints did not answer: no check found a definite reason to refuse."""
        failures = self.failures
        return bool(failures) and all(r.transient for r in failures)

    def to_dict(self) -> dict[str, Any]:
        out = {"ok": self.ok, "retryable": self.retryable, "checks": [r.to_dict() for r in self.results]}
        if self.sizing is not None:
            out["sizing"] = self.sizing.to_dict()
        if self.initial_copy is not None:
            out["initial_copy"] = {t: d.to_dict() for t, d in self.initial_copy.items()}
        return out

    def text(self) -> str:
        lines = [self.sizing.text()] if self.sizing is not None else []
        for r in self.results:
            mark = "ok  " if r.ok else {ERROR: "FAIL", SKIPPED: "skip"}.get(r.severity, "warn")
            lines.append(f"[{mark}] {r.name}: {r.reason}" + (" (no answer: not checked now)" if r.transient and not r.ok
                                                             else ""))
            if r.fix and not r.ok:
                lines.append(f"       fix: {r.fix}")
        return "\n".join(lines)
