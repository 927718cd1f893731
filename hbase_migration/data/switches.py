"""The source's split/merge and normalizer switches, held off while copies run, restored to what was found.

Why: a copy partitions the source by its regions. A split, a merge or a normalizer run during the copy does
not lose data (a resume works on key ranges, `resume.py`), but it moves regions under running scans (retries)
and changes the plan between attempts; an HBase operator turns them off for a long copy
(`splitormerge_switch 'SPLIT', false`, `splitormerge_switch 'MERGE', false`, `normalizer_switch false`) and back
on after, to exactly what they were.

How, with several copies of one source at once (a migration's mapped copies, another plan's DAG, a CLI copy):
reference counting in the run ledger, keyed by the source's cluster key. Each copy of a table is a holder
(`copy <copy id> <table>`). The first holder reads the switches, records the state found in the ledger, then
turns them off; later holders only add themselves (and turn them off again when no other holder is left, e.g.
the retry of a killed copy, whose own stale hold is still there). A holder that ends removes itself; the last
one restores the recorded state and clears it. Because the state found is recorded before anything is turned
off, and cleared only by a successful restore, a copy killed and retried restores the ORIGINAL state, never the
"off" its first attempt left. The changes of one source are serialised by a lease in the ledger (a holder that
dies loses it when it expires). A killed copy that is never retried leaves its hold: the migration DAG's
`release_switches` task (trigger rule all_done) releases its run's holds, and `python -m hbase_migration
switches --source C --release HOLDER` releases one by hand.

Statement builders and the output parser are pure; `read_switches`/`set_switches` run the cluster's shell.
"""
from __future__ import annotations

import contextlib
import logging
import re
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

NAMES = ("split", "merge", "normalizer")
_BOOLEAN_LINE = re.compile(r"^\s*(true|false)\s*$")


class SwitchError(RuntimeError):
    """The switches could not be read, set or restored; the message says their state and what to do."""


@dataclass(frozen=True)
class SwitchState:
    split: bool
    merge: bool
    normalizer: bool

    def to_dict(self) -> dict[str, bool]:
        return {"split": self.split, "merge": self.merge, "normalizer": self.normalizer}

    @classmethod
    def from_dict(cls, data: Any) -> "SwitchState":
        return cls(bool(data["split"]), bool(data["merge"]), bool(data["normalizer"]))

    def text(self) -> str:
        return ", ".join(f"{n} {'on' if v else 'off'}" for n, v in self.to_dict().items())


OFF = SwitchState(False, False, False)


# --------------------------------------------------------------------------------------------------
# Shell statements and output (pure)


def read_statements() -> list[str]:
    """`splitormerge_enabled 'SPLIT'`, `... 'MERGE'`, `normalizer_enabled`: each prints true or false."""
    return ["splitormerge_enabled 'SPLIT'", "splitormerge_enabled 'MERGE'", "normalizer_enabled"]


def set_statements(state: SwitchState) -> list[str]:
    """The statements that put the switches in `state`; each prints the switch's previous value."""
    def word(v: bool) -> str:
        return "true" if v else "false"
    return [f"splitormerge_switch 'SPLIT', {word(state.split)}", f"splitormerge_switch 'MERGE', {word(state.merge)}",
            f"normalizer_switch {word(state.normalizer)}"]


def parse_state(stdout: str, what: str) -> SwitchState:
    """The three values one session printed (one `true`/`false` line per statement, in order; the shell's `Took
    N seconds` lines and anything else are skipped)."""
    values = [m.group(1) == "true" for line in stdout.splitlines() if (m := _BOOLEAN_LINE.match(line))]
    if len(values) != 3:
        raise SwitchError(f"{what}: expected one true/false line for each of split, merge and normalizer, the "
                          f"shell printed {len(values)}: {stdout[-400:]!r}")
    return SwitchState(*values)


def holder_name(copy_id: str, table: str | None = None) -> str:
    """The holder of one copy of one table (the CLI's), or of every copy of a migration run (`table` None: the
    DAG's copies share one hold, released by its `release_switches` task once they have all ended). A retry
    finds its own earlier hold."""
    return f"copy {copy_id}" + (f" {table}" if table else "")


# --------------------------------------------------------------------------------------------------
# The shell (I/O)


def _shell(cluster: "Cluster", statements: list[str], what: str) -> str:
    from hbase_migration.clusters import channels
    from hbase_migration.clusters.shell import ShellCommandError

    try:
        return channels.shell(cluster, statements, timeout_s=max(cluster.shell_timeout_s, 60.0)).stdout
    except ShellCommandError as e:
        raise SwitchError(f"{what} on {cluster.name!r} failed: {e} (splitormerge_switch needs HBase 1.3+, "
                          "normalizer_switch 1.2+; to copy without holding them, set hold_switches off: form/plan "
                          "[copy] hold_switches, CLI --no-hold-switches)") from e


def read_switches(cluster: "Cluster") -> SwitchState:
    """The switches as the master has them now."""
    what = "reading the split/merge and normalizer switches"
    return parse_state(_shell(cluster, read_statements(), what), what)


def set_switches(cluster: "Cluster", state: SwitchState) -> SwitchState:
    """Put the switches in `state`; returns what they were just before."""
    what = f"setting the switches to {state.text()}"
    return parse_state(_shell(cluster, set_statements(state), what), what)


# --------------------------------------------------------------------------------------------------
# Holding them off (the ledger keeps the count and the state found)


def source_key(cluster: "Cluster") -> str:
    return str(cluster.cluster_key.normalized())


@contextlib.contextmanager
def _lease(ledger: Any, key: str, lease_s: float, wait_s: float, clock: Callable[[], float] = time.monotonic,
           sleep: Callable[[float], None] = time.sleep) -> Iterator[str]:
    """The ledger's lease on `key`'s switches for this block; waits for another holder's change to finish."""
    owner = f"{uuid.uuid4().hex[:12]}"
    deadline = clock() + wait_s
    pause = 0.2
    while not ledger.switch_lock(key, owner, lease_s):
        if clock() >= deadline:
            guard = ledger.switch_guard(key) or {}
            raise SwitchError(f"the switches of {key} are being changed by another copy (lease "
                              f"{guard.get('lock_owner')} until {guard.get('lock_expires_ms')} ms); waited "
                              f"{wait_s:.0f}s. Try again; a lease whose holder died expires by itself")
        sleep(pause)
        pause = min(pause * 2, 5.0)
    try:
        yield owner
    finally:
        ledger.switch_unlock(key, owner)


def _lease_s(cluster: "Cluster") -> float:
    """Long enough for two shell sessions (a real shell spends 10-30 s starting its JVM)."""
    return 2 * max(cluster.shell_timeout_s, 60.0) + 60.0


def hold(cluster: "Cluster", ledger: Any, holder: str, run_id: str | None = None,
         logger: logging.Logger | None = None) -> dict[str, Any]:
    """Turn the source's switches off for `holder` (see the module docstring); returns what was found and set."""
    from hbase_migration.clusters.channels import one_shell_per_cluster

    out = logger or log
    key = source_key(cluster)
    # the read and the set in one shell (one JVM start), the state found recorded in between
    with _lease(ledger, key, _lease_s(cluster), _lease_s(cluster) + 60.0) as owner, one_shell_per_cluster():
        others = [h["holder"] for h in ledger.switch_holds(key) if h["holder"] != holder]
        guard = ledger.switch_guard(key) or {}
        if guard.get("found") is None:
            found = read_switches(cluster)  # a failure here leaves nothing behind
            ledger.switch_hold(key, holder, run_id)
            ledger.switch_found(key, owner, found.to_dict())  # recorded BEFORE anything is turned off
            out.info("switches of %s: found %s (recorded in the ledger; restored when the last copy ends)", key,
                     found.text())
        else:
            ledger.switch_hold(key, holder, run_id)
            found = SwitchState.from_dict(guard["found"])
            out.info("switches of %s: held off since %s ms; found then: %s%s", key, guard.get("found_ms"),
                     found.text(), f" (also held by {', '.join(others)})" if others else "")
            if others:
                out.info("switches of %s: set off (split, merge, normalizer) for %s: already off for the others",
                         key, holder)
                return {"source": key, "holder": holder, "found": found.to_dict(), "set": OFF.to_dict(),
                        "holders": len(others) + 1}
        try:
            before = set_switches(cluster, OFF)
        except SwitchError as e:
            _undo_hold(cluster, ledger, key, owner, holder, others, found, out)
            raise SwitchError(f"{e}; the copy did not start") from e
        if guard.get("found") is not None and before != OFF:
            out.warning("switches of %s were %s although held off (turned on by hand meanwhile?): off again", key,
                        before.text())
        out.info("switches of %s: set off (split, merge, normalizer) for %s (were %s just before)", key, holder,
                 before.text())
    return {"source": key, "holder": holder, "found": found.to_dict(), "set": OFF.to_dict(),
            "holders": len(others) + 1}


def _undo_hold(cluster: "Cluster", ledger: Any, key: str, owner: str, holder: str, others: list[str],
               found: SwitchState, out: logging.Logger) -> None:
    """A hold that could not turn the switches off: drop it, and when nobody else holds them put back what
    was found (a set may have half-happened)."""
    ledger.switch_release(key, holder)
    if others:
        return
    try:
        set_switches(cluster, found)
        ledger.switch_found(key, owner, None)
    except SwitchError as e:  # reported; the recorded state stays for the next restore
        out.error("switches of %s: could not put back %s after a failed hold: %s", key, found.text(), e)


def release(cluster: "Cluster", ledger: Any, holder: str, logger: logging.Logger | None = None) -> dict[str, Any]:
    """`holder` no longer needs the switches off; the last holder restores the state found. A failed restore
    keeps the hold (and the state found), so it can be released again."""
    out = logger or log
    key = source_key(cluster)
    with _lease(ledger, key, _lease_s(cluster), _lease_s(cluster) + 60.0) as owner:
        others = [h["holder"] for h in ledger.switch_holds(key) if h["holder"] != holder]
        if others:
            ledger.switch_release(key, holder)
            out.info("switches of %s: stay off, still needed by %s", key, ", ".join(others))
            return {"source": key, "holder": holder, "restored": None, "held_by": others}
        guard = ledger.switch_guard(key) or {}
        if guard.get("found") is None:
            ledger.switch_release(key, holder)
            out.warning("switches of %s: no state found recorded, nothing to restore", key)
            return {"source": key, "holder": holder, "restored": None, "held_by": []}
        found = SwitchState.from_dict(guard["found"])
        try:
            before = set_switches(cluster, found)
        except SwitchError as e:
            raise SwitchError(f"{e}. The switches of {key} may still be off; the state found ({found.text()}) stays "
                              f"in the ledger with the hold of {holder!r}: release it again with `python -m "
                              f"hbase_migration switches --source <conn> --release '{holder}'`") from e
        ledger.switch_found(key, owner, None)
        ledger.switch_release(key, holder)
        if before != OFF:
            out.warning("switches of %s were %s, not off, before the restore (changed by hand meanwhile?)", key,
                        before.text())
        out.info("switches of %s: restored to %s (as found before the copies)", key, found.text())
    return {"source": key, "holder": holder, "restored": found.to_dict(), "held_by": []}


def release_run(cluster: "Cluster", ledger: Any, run_id: str, logger: logging.Logger | None = None
                ) -> list[dict[str, Any]]:
    """Release every hold a run's copies left on this source (a copy killed and not retried keeps its own)."""
    key = source_key(cluster)
    return [release(cluster, ledger, h["holder"], logger) for h in ledger.run_switch_holds(run_id)
            if h["source_key"] == key]


def status(cluster: "Cluster", ledger: Any) -> dict[str, Any]:
    """The switches now, the state recorded before the holds (None: nothing held), and the holders."""
    key = source_key(cluster)
    guard = ledger.switch_guard(key) or {}
    return {"source": key, "now": read_switches(cluster).to_dict(), "found": guard.get("found"),
            "found_ms": guard.get("found_ms"), "holds": ledger.switch_holds(key)}


def status_text(data: dict[str, Any]) -> str:
    """`status()` as the CLI prints it."""
    lines = [f"switches of {data['source']} now: {SwitchState.from_dict(data['now']).text()}"]
    if data["found"] is None:
        lines.append("not held by any copy (nothing recorded to restore)")
    else:
        lines.append(f"held off since {data['found_ms']} ms; found then (restored by the last holder): "
                     f"{SwitchState.from_dict(data['found']).text()}")
    lines += [f"  holder: {h['holder']} (run {h['run_id'] or '-'}, since {h['held_ms']} ms)" for h in data["holds"]]
    return "\n".join(lines)


class SwitchHold:
    """`with SwitchHold(cluster, ledger_url, holder):` the switches stay off for the block, whatever ends it."""

    def __init__(self, cluster: "Cluster", ledger_url: str, holder: str, run_id: str | None = None,
                 logger: logging.Logger | None = None):
        self.cluster, self.ledger_url, self.holder, self.run_id = cluster, ledger_url, holder, run_id
        self.logger = logger
        self.held: dict[str, Any] | None = None
        self.released: dict[str, Any] | None = None

    def _ledger(self) -> Any:
        from hbase_migration.ledger.store import Ledger

        return Ledger.open(self.ledger_url)

    def __enter__(self) -> "SwitchHold":
        with self._ledger() as ledger:
            self.held = hold(self.cluster, ledger, self.holder, self.run_id, self.logger)
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._ledger() as ledger:
            self.released = release(self.cluster, ledger, self.holder, self.logger)
