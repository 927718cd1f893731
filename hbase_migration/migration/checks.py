"""What a preflight check returns, and the report of them all (pure).

A check's result is a fact about the clusters (`ok`, or a refusal with its reason and fix); its severity says
whether a refusal fails the run (ERROR), only informs (WARNING) or could not be judged because what it checks is
absent (SKIPPED).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "severity": self.severity, "reason": self.reason,
                "fix": self.fix}


@dataclass(frozen=True)
class PreflightReport:
    results: tuple[CheckResult, ...]
    sizing: Any = None  # sizing_probe.SizingReport when the run was sized

    @property
    def ok(self) -> bool:
        return all(r.ok or r.severity != ERROR for r in self.results)

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if not r.ok and r.severity == ERROR]

    def to_dict(self) -> dict[str, Any]:
        out = {"ok": self.ok, "checks": [r.to_dict() for r in self.results]}
        if self.sizing is not None:
            out["sizing"] = self.sizing.to_dict()
        return out

    def text(self) -> str:
        lines = [self.sizing.text()] if self.sizing is not None else []
        for r in self.results:
            mark = "ok  " if r.ok else {ERROR: "FAIL", SKIPPED: "skip"}.get(r.severity, "warn")
            lines.append(f"[{mark}] {r.name}: {r.reason}")
            if r.fix and not r.ok:
                lines.append(f"       fix: {r.fix}")
        return "\n".join(lines)
