"""The cut-over's window: from the last checks with the clients still on the source to the switch, in one call.

`run_window` does, in order (the timeline and why in `cutover_plan`'s docstring):

1. opens a shell session on each cluster (`channels.shell_session`: their JVM start paid now, not in the freeze),
   prepares the fence (an Admin of the shell's JRuby; READONLY: a flush of the tables; ACL: every permission read
   and the fence planned, a principal that cannot be fenced per table refused);
2. waits for the forward peer's lag to be under the bound (`cutover_plan.lag_gate`, abort after `lag_wait_s`);
3. the live pass: the source's region boundaries read once (the bounded checks' work items: one key range per
   region of every table, compared by a pool of `parallel_checks` threads), then the bounded check from the last
   verification's start, writes still on (abort on a difference that stays); its start is the bound the check in
   the freeze starts from;
4. FENCES the source (READONLY on every table at once, or WRITE taken away), rolls the WALs of every source region
   server and waits until each queue of the forward peer has let go of the WALs from before the roll
   (`replication/wal_drain.py`), runs the bounded check, gives the target its WRITE back if it is fenced by ACL
   (`unfence_joined`, with `refence_joined` known: below), and calls `switch("switch")` (the clients write to the
   target from its return);
5. after the switch: ENABLES the reverse peer (the target's writes, early ones too, ship to the source) and, with
   READONLY, makes the source writable again (a READONLY table refuses replicated edits); with ACL the fence
   stays (the replication sink writes as the HBase superuser).

An abort before the fence changes nothing. After it, and before the switch, the target's ACL fence is put back
if it had been lifted (`refence_joined`: fail closed, before anything else), the source's fence is lifted (same
session; a one-shot shell if the session died) and `switch("abort")` is called when the switch had started; the
reverse peer stays DISABLED (it holds any early target write; the caller removes it when there is none). A failure
after the switch undoes nothing: the clients are on the target; the error says the state of both sides.

Every step is reported through `on_step(name, status, detail)` as it happens (the operator records each as a
ledger phase) and timed (`cutover_plan.timeline`).

The rollback is this same window with the roles swapped (`roles=ROLLBACK_ROLES`, the plan from
`cutover.rollback_window_plan`, the clusters passed the other way round): the migration's target is fenced and its
reverse peer drained, the forward peer re-created DISABLED on the source is the peer ENABLED after the switch, and
`unfence_joined` (the statements that give the source its WRITE back after an ACL cut-over) run on the source
just before the switch, so no client moved there is refused (`refence_joined` take it away again on an abort; a
plan recorded without them gives it back first thing after the switch, as before). A cut-over after a rollback
fenced by ACL passes the target's the same way.
"""
from __future__ import annotations

import contextlib
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from hbase_migration.migration.cutover_plan import (
    CUTOVER_ROLES,
    READONLY,
    CutoverAborted,
    Roles,
    Step,
    WindowOptions,
    lag_gate,
    past_deadline,
    timeline,
)

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster
    from hbase_migration.clusters.shell import ShellSession
    from hbase_migration.migration.cutover import SwitchPlan

log = logging.getLogger(__name__)


class OneShotShell:
    """A cluster's shell one call per batch (`channels.shell`), for when no session could be opened; `prelude`
    statements (the JRuby Admin) run at the start of every call."""

    opened_s = 0.0
    alive = True

    def __init__(self, cluster: "Cluster"):
        self.cluster = cluster
        self.prelude: list[str] = []

    def run(self, statements: list[str], timeout_s: float = 180.0) -> Any:
        from hbase_migration.clusters import channels

        return channels.shell(self.cluster, self.prelude + list(statements),
                              timeout_s=max(timeout_s, self.cluster.shell_timeout_s))


class PostSwitchError(RuntimeError):
    """A step after the switch failed: the clients are on the target, nothing is undone; the message says the
    state of both sides and what to run."""


def _now_ms(clock: Callable[[], float]) -> int:
    return int(clock() * 1000)


class _Window:
    def __init__(self, source: "Cluster", target: "Cluster", plan: "SwitchPlan", options: WindowOptions,
                 switch: Callable[[str], None], on_step: Callable[[str, str, Any], None] | None,
                 clock: Callable[[], float], sleep: Callable[[float], None], roles: Roles = CUTOVER_ROLES,
                 unfence_joined: tuple[str, ...] = (), refence_joined: tuple[str, ...] = ()):
        self.source, self.target, self.plan, self.options = source, target, plan, options
        self.roles, self.unfence_joined, self.refence_joined = roles, tuple(unfence_joined), tuple(refence_joined)
        self.joined_lifted = False  # the joined side's WRITE given back before the switch (put back on an abort)
        self.switch, self.clock, self.sleep = switch, clock, sleep
        self.on_step = on_step or (lambda _name, _status, _detail: None)
        self.steps: list[Step] = []
        self.result: dict[str, Any] = {"tables": list(plan.tables), "freeze_method": options.freeze_method,
                                       "forward_peer": plan.peer_id, "reverse_peer": plan.reverse_peer_id}
        self.fenced = False
        self.switch_started = False
        self.unfence: list[str] = []
        self.src_shell: "ShellSession | None" = None
        self.tgt_shell: "ShellSession | None" = None
        self.stack: contextlib.ExitStack | None = None
        self.jruby = True  # the source's shell evaluates JRuby (HBase's own shell does; a stand-in may not)
        self.canary_granted: list[Any] = []  # ACL: the canary's grants, revoked when the window ends
        self.tag = uuid.uuid4().hex  # the canary's condition value: no cell ever holds it, nothing is written
        self.check_ranges: list[Any] | None = None  # the bounded checks' work items, read before the freeze

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[dict[str, Any]]:
        detail: dict[str, Any] = {}
        started = self.clock()
        self.on_step(name, "running", None)
        try:
            yield detail
        except BaseException as e:
            self.steps.append(Step(name, started, self.clock()))
            self.on_step(name, "failed", {**detail, "error": str(e)})
            raise
        self.steps.append(Step(name, started, self.clock()))
        detail["seconds"] = round(self.steps[-1].seconds, 3)
        self.result.setdefault("details", {})[name] = detail
        self.on_step(name, "success", detail)

    # ---------------------------------------------------------------------------------------------- pieces
    def open_sessions(self, stack: contextlib.ExitStack, detail: dict[str, Any]) -> None:
        """A session on each cluster, opened at once; a shell that does not answer a session within
        `session_open_s` (one that reads all its input before running it, or a JVM slower than that) is used one
        call per batch instead (`OneShotShell`: correct, but each batch then pays the shell's start)."""
        from hbase_migration.clusters import channels
        from hbase_migration.clusters.shell import ShellCommandError

        self.stack = stack

        def open_one(cluster: "Cluster") -> tuple[Any, Any]:
            manager = channels.shell_session(cluster, timeout_s=self.options.session_open_s)
            try:
                return manager, manager.__enter__()
            except ShellCommandError as e:
                log.warning("cluster %s: no shell session (%s): its statements run one shell call per batch",
                            cluster.name, " ".join(str(e).split())[:300])
                return None, OneShotShell(cluster)

        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="shell-open") as pool:
            futures = [pool.submit(open_one, c) for c in (self.source, self.target)]
            results, error = [], None
            for future in futures:
                try:
                    results.append(future.result())
                except BaseException as e:  # not a shell failure: close what opened, then raise
                    error = error or e
        for manager, _shell in results:
            if manager is not None:
                stack.push(manager.__exit__)
        if error is not None:
            raise error
        (_, self.src_shell), (_, self.tgt_shell) = results
        detail["sessions"] = {side: not isinstance(sh, OneShotShell)
                              for side, sh in (("source", self.src_shell), ("target", self.tgt_shell))}

    def prepare_fence(self, detail: dict[str, Any]) -> None:
        from hbase_migration.clusters import channels
        from hbase_migration.clusters.shell import ShellCommandError
        from hbase_migration.migration import freeze

        tables = list(self.plan.tables)
        try:
            self.src_shell.run(freeze.jruby_admin_statements())
            if isinstance(self.src_shell, OneShotShell):
                self.src_shell.prelude = freeze.jruby_admin_statements()  # every call is a new shell
        except ShellCommandError as e:  # a shell that does not evaluate JRuby: the shell's own commands only
            log.warning("the source's shell cannot reach HBase's Admin API from JRuby (%s): READONLY through `alter`, "
                        "one table after the other", " ".join(str(e).split())[:300])
            self.jruby = False
            if not isinstance(self.src_shell, OneShotShell):  # the session died with the failed statement
                self.src_shell = self.stack.enter_context(channels.shell_session(self.source))
        detail["admin_api"] = self.jruby
        if self.options.freeze_method == READONLY:
            if self.jruby:
                self.fence_statements = [freeze.readonly_parallel_statement(tables, True)]
                self.unfence = [freeze.readonly_parallel_statement(tables, False)]
            else:
                describes = [freeze.describe_statement(t) for t in tables]
                self.fence_statements = [freeze.readonly_statement(t, True) for t in tables] + describes
                self.unfence = [freeze.readonly_statement(t, False) for t in tables] + describes
            if self.options.flush_before:
                try:
                    self.src_shell.run(freeze.flush_statements(tables), timeout_s=600)
                except ShellCommandError as e:  # only a speed-up: the fence works without it
                    log.warning("flush before the freeze failed (%s): going on", " ".join(str(e).split())[:300])
                    if not isinstance(self.src_shell, OneShotShell):
                        self.src_shell = self.stack.enter_context(channels.shell_session(self.source))
                        if self.jruby:
                            self.src_shell.run(freeze.jruby_admin_statements())
            detail["statements"] = self.fence_statements
            return
        if not self.jruby:
            raise CutoverAborted("acl", "an ACL freeze runs HBase's Admin API from the shell's JRuby, which this "
                                        "cluster's shell_command does not evaluate: freeze with READONLY",
                                 {"fence": "not applied", "changed": False})
        self.prepare_acl(tables, detail)

    def prepare_acl(self, tables: list[str], detail: dict[str, Any]) -> None:
        """The ACL fence planned so that it fails closed (freeze.py's ACL section): `hbase.superuser` read from
        every server's /conf, every permission read (a line not understood refuses), a namespace's WRITE fenced
        there only when all its tables are cut over; then the canary: refused before it is granted (the probe can
        see a refusal; HBase's first refusal to a client costs seconds, paid here), granted like the clients,
        then allowed on every region server holding the tables' regions. A refusal changes nothing."""
        from hbase_migration.clusters.hbase_conf import ConfUnreadable, read_server_confs
        from hbase_migration.clusters.shell import ShellCommandError
        from hbase_migration.migration import freeze

        def refuse(message: str, cause: BaseException | None = None) -> None:
            raise CutoverAborted("acl", message, {"fence": "not applied", "changed": False}) from cause

        options = self.options
        try:
            superusers, unreadable = freeze.acl_conf_refusal(read_server_confs(self.source), options.superusers)
        except ConfUnreadable as e:
            refuse(f"hbase.superuser cannot be read, so who passes every permission check is unknown: {e}")
        if unreadable:
            refuse(unreadable)
        try:
            grants, members = freeze.read_permissions(self.src_shell.run, tables, options.freeze_exempt)
        except freeze.UnreadablePermissions as e:
            refuse(str(e), e)
        except ShellCommandError as e:
            refuse(f"the source's permissions cannot be read ({' '.join(str(e).split())[:400]}): an ACL freeze needs "
                   "HBase's AccessController (hbase.security.authorization); freeze with READONLY", e)
        plan = freeze.acl_fence_plan(tables, grants, options.freeze_exempt, superusers=superusers,
                                     namespace_tables=members, canary=options.canary_user)
        detail["superusers"] = superusers
        if plan.refusals:
            refuse("; ".join(plan.refusals))
        if not plan.fenced:
            refuse(f"no principal holds WRITE on {', '.join(tables)}: an ACL fence would stop nothing (is HBase's "
                   "AccessController on? who writes?); use READONLY")
        canary = freeze.canary_grants(options.canary_user, tables, plan.namespaces)
        ready_s = options.conditions.lag_wait_s
        self.src_shell.run(freeze.canary_statements(options.canary, options.canary_keytab))
        before = freeze.parse_canary(self.src_shell.run([freeze.canary_probe_statement(
            tables, "REFUSED", ready_s, self.tag)], timeout_s=ready_s + 120).stdout)
        if before.short_of("REFUSED"):
            refuse(f"the canary principal {options.canary} can write before the toolkit granted it anything ("
                   + "; ".join(before.short_of("REFUSED")[:5]) + "): its refusal would prove nothing; give "
                   "fence_canary a principal of its own that is no superuser and holds no grant")
        self.canary_granted = canary
        out = self.src_shell.run([freeze.acl_batch_statement([(g, g.actions) for g in canary])]).stdout
        changed, failed = freeze.parse_acl_batch(out)
        if failed:
            raise CutoverAborted("acl", f"the canary {options.canary} could not be granted: " + "; ".join(failed))
        allowed = freeze.parse_canary(self.src_shell.run([freeze.canary_probe_statement(
            tables, "ALLOWED", ready_s, self.tag)], timeout_s=ready_s + 120).stdout)
        if allowed.short_of("ALLOWED"):
            raise CutoverAborted("acl", f"the canary {options.canary}, granted READ and WRITE like the clients, was "
                                        f"not let write within {ready_s:g}s: "
                                 + "; ".join(allowed.short_of("ALLOWED")[:5])
                                 + (" (Kerberos: give fence_canary_keytab)" if self.source.security else ""))
        fence = freeze.acl_fence_plan(tables, [*grants, *canary], options.freeze_exempt, superusers=superusers,
                                      namespace_tables=members, canary=options.canary_user)
        detail["fenced"] = [g.describe() for g in fence.fenced if g.principal != options.canary_user]
        detail["namespaces_fenced"] = list(fence.namespaces)
        detail["canary"] = {"principal": options.canary, "servers": allowed.servers(),
                            "pairs": len(allowed.answers), "ready_ms": before.ms + allowed.ms}
        self.fence_statements, self.unfence = list(fence.fence), list(fence.unfence)
        self.result["acl_fenced"] = detail["fenced"]
        self.result["unfence_statements"] = self.unfence
        self.result["refence_statements"] = list(fence.refence)

    def poll_lag(self, cluster: "Cluster", peer_id: str, wait_s: float, detail: dict[str, Any]) -> list[str]:
        """Polls `peer_id`'s queues on `cluster` through the lag gate for up to `wait_s`: [] once close enough to
        drained, else the last reasons."""
        from hbase_migration.clusters import zk
        from hbase_migration.replication import metrics

        deadline = time.monotonic() + wait_s
        with zk.connect(cluster, timeout=cluster.timeout_s) as client:
            while True:
                snapshot = metrics.peer_status(cluster, peer_id, client, self.clock())
                reasons = lag_gate(snapshot, self.options.conditions.max_lag_ms, self.options.caught_up_queue_size)
                detail["last"] = snapshot.summary()
                if not reasons or time.monotonic() >= deadline:
                    return reasons
                log.info("lag gate (%s): %s", peer_id, "; ".join(reasons[:3]))
                self.sleep(2.0)

    def wait_lag(self, detail: dict[str, Any]) -> None:
        conditions = self.options.conditions
        reasons = self.poll_lag(self.source, self.plan.peer_id, conditions.lag_wait_s, detail)
        if reasons:
            raise CutoverAborted("lag", f"the {self.roles.drained} {self.plan.peer_id} stayed behind for "
                                        f"{conditions.lag_wait_s:g}s: " + "; ".join(reasons[:5]),
                                 {"fence": "not applied", "changed": False})

    def wait_reverse(self, detail: dict[str, Any]) -> None:
        """After the switch: the kept peer's queues (the cut-over's reverse peer, the rollback's forward peer) close
        to drained before the verification compares both sides live. Not an abort (the clients have moved): a
        lagging peer is logged, and the verification judges."""
        try:
            reasons = self.poll_lag(self.target, self.plan.reverse_peer_id, self.options.conditions.lag_wait_s,
                                    detail)
        except Exception as e:  # a reading, not a step of the switch: post_verify judges
            reasons = [f"{type(e).__name__}: {e}"]
        detail["caught_up"] = not reasons
        if reasons:
            log.warning("the %s %s is still behind after %gs: %s", self.roles.kept, self.plan.reverse_peer_id,
                        self.options.conditions.lag_wait_s, "; ".join(reasons[:5]))

    def plan_check(self, detail: dict[str, Any]) -> None:
        """The bounded checks' work items, (table, key range) one per region of the fenced side (`plan_ranges`),
        read once before the freeze: a region split or merged since only moves where the work is cut."""
        from hbase_migration.migration.bounded_check import max_ranges_for, plan_ranges, read_region_starts

        started = self.clock()
        tables = list(self.plan.tables)
        parallel = self.options.parallel_checks
        self.check_ranges = plan_ranges(tables, read_region_starts(self.source, tables, parallel=parallel),
                                        max_ranges_for(parallel))
        detail.update(check_ranges=len(self.check_ranges), check_parallel=self.options.parallel_checks,
                      regions_read_s=round(self.clock() - started, 3))

    def check(self, since: int, kept_since_ms: int | None, live: bool) -> dict[str, Any]:
        from hbase_migration.migration.bounded_check import bounded_check

        return bounded_check(self.source, self.target, self.plan.tables, since, kept_since_ms=kept_since_ms,
                             live=live, recompare_sleep_s=self.options.conditions.recompare_sleep_s,
                             settle_s=self.options.conditions.lag_wait_s if live else 0.0,
                             parallel=self.options.parallel_checks, roles=self.roles, ranges=self.check_ranges)

    def apply_fence(self, detail: dict[str, Any]) -> None:
        fence_started_s = self.clock()
        out = self.src_shell.run(self.fence_statements, timeout_s=600)
        self.fenced = True
        if self.options.freeze_method == READONLY:
            states = self.readonly_read_back(out.stdout)
            detail["readonly"] = states
            wrong = [t for t in self.plan.tables if states.get(t) is not True]
            if wrong:
                raise CutoverAborted("fence", f"READONLY not set on {', '.join(wrong)} after the alter (read back: "
                                              f"{states})")
        else:
            self.prove_acl_fence(out.stdout, fence_started_s, detail)

    def prove_acl_fence(self, stdout: str, fence_started_s: float, detail: dict[str, Any]) -> None:
        """The fence proven before the WAL roll: every change made, then the canary's write refused on every region
        server holding a region of the tables, polled until then or the freeze's deadline. (A server whose
        permission cache lagged would take a client's write after the roll, which the drain does not wait for.)"""
        from hbase_migration.migration import freeze

        changed, failed = freeze.parse_acl_batch(stdout)
        detail["changes"] = changed
        detail["batch_s"] = round(self.clock() - fence_started_s, 3)  # the grants' batch, apart from its proof
        if failed:
            raise CutoverAborted("fence", f"{len(failed)} permission change(s) of the fence failed: "
                                 + "; ".join(failed[:5]))
        left = max(1.0, self.options.conditions.max_freeze_s - (self.clock() - fence_started_s))
        report = freeze.parse_canary(self.src_shell.run([freeze.canary_probe_statement(
            self.plan.tables, "REFUSED", left, self.tag)], timeout_s=left + 60).stdout)
        detail["proof"] = {"servers": report.servers(), "pairs": len(report.answers), "polls": report.polls,
                           "ms": report.ms}
        if report.short_of("REFUSED"):
            raise CutoverAborted("freeze_deadline", f"the fence was not proven within {left:.1f}s: the canary "
                                 f"{self.options.canary} could still write (or got no answer) on: "
                                 + "; ".join(report.short_of("REFUSED")[:5]))

    def readonly_read_back(self, stdout: str) -> dict[str, bool]:
        """Each table's READONLY as the fence (or its lifting) printed it: the Admin statement's marks, or the
        `describe`s that follow the `alter`s."""
        from hbase_migration.migration import freeze

        if self.jruby:
            return freeze.parse_readonly_marks(stdout)
        sections = freeze.split_describes(stdout)
        return {t: freeze.parse_readonly(sections[t], t) for t in self.plan.tables if t in sections}

    def roll_and_drain(self, fence_started: float, roll: dict[str, Any], drain: dict[str, Any]) -> None:
        from hbase_migration.clusters import zk
        from hbase_migration.migration.freeze import wal_roll_statement
        from hbase_migration.replication import wal_drain

        with zk.connect(self.source, timeout=self.source.timeout_s) as client:
            seen = wal_drain.read_queues(client, self.source.znode_parent, self.plan.peer_id)
            marked = wal_drain.mark(seen)
            roll["servers"] = list(seen.live_servers)
            roll["marked_wals"] = sum(len(w) for w in marked.values())
            self.src_shell.run([wal_roll_statement(s) for s in seen.live_servers])
            roll["seconds_to_request"] = round(self.clock() - fence_started, 3)
            self.steps.append(Step("wal_roll", self._roll_started, self.clock()))
            started = self.clock()
            deadline = time.monotonic() + max(0.0, self.options.conditions.max_freeze_s
                                              - (self.clock() - fence_started))
            verdict = wal_drain.wait_drained(self.source, client, self.plan.peer_id, marked, deadline=deadline,
                                             interval_s=self.options.drain_poll_s)
            self.steps.append(Step("drain", started, self.clock()))
            drain.update(verdict.to_dict())
            drain["seconds"] = round(self.clock() - started, 3)
        if not verdict.drained:
            raise CutoverAborted("freeze_deadline", f"the {self.roles.drained} {self.plan.peer_id} did not drain "
                                 f"within {self.options.conditions.max_freeze_s:g}s of the fence: "
                                 + "; ".join(verdict.reasons[:5]))

    def enable_reverse(self, detail: dict[str, Any]) -> None:
        from hbase_migration.clusters import zk
        from hbase_migration.replication import zk_peers
        from hbase_migration.replication.shell import enable_peer

        with zk.connect(self.target, timeout=self.target.timeout_s) as client:
            peer = zk_peers.read_peer(client, self.target.znode_parent, self.plan.reverse_peer_id)
            if peer is None:
                raise PostSwitchError(f"{self.roles.kept} {self.plan.reverse_peer_id} is gone from the "
                                      f"{self.roles.joined}")
            if peer.enabled is not True:
                self.tgt_shell.run([enable_peer(self.plan.reverse_peer_id)])
            deadline = time.monotonic() + 60
            while True:
                peer = zk_peers.read_peer(client, self.target.znode_parent, self.plan.reverse_peer_id)
                if peer is not None and peer.enabled is True:
                    break
                if time.monotonic() >= deadline:
                    raise PostSwitchError(f"{self.roles.kept} {self.plan.reverse_peer_id} not ENABLED in ZooKeeper 60s "
                                          "after enable_peer")
                self.sleep(0.1)
        detail["state"] = "ENABLED"

    def lift_fence(self) -> str:
        """The fence taken away again (abort). Returns what was done; raises when it could not be."""
        from hbase_migration.clusters import channels

        if not self.fenced:
            return "no fence was applied"
        try:
            if self.src_shell is not None and self.src_shell.alive:
                self.src_shell.run(self.unfence, timeout_s=600)
                return "fence lifted"
        except Exception as e:  # the session died: one shell call of its own below
            log.warning("lifting the fence in the session failed (%s): a new shell", e)
        from hbase_migration.migration import freeze

        statements = (freeze.jruby_admin_statements() if self.jruby else []) + self.unfence
        channels.shell(self.source, statements, timeout_s=max(self.source.shell_timeout_s, 600.0))
        return "fence lifted (new shell)"

    # ---------------------------------------------------------------------------------------------- the run
    def run(self, verify_started_ms: Mapping[str, int | None], kept_since_ms: int | None) -> dict[str, Any]:
        try:
            return self._run(verify_started_ms, kept_since_ms)
        except CutoverAborted as e:  # raised as a cut-over's by the shared steps: named as this window's kind
            prefix = "cut-over aborted"
            if self.roles.kind != "cut-over" and str(e).startswith(prefix):
                e.args = (f"{self.roles.kind} aborted{str(e)[len(prefix):]}",)
            raise

    def _run(self, verify_started_ms: Mapping[str, int | None], kept_since_ms: int | None) -> dict[str, Any]:
        from hbase_migration.migration.bounded_check import since_ms

        conditions = self.options.conditions
        since = since_ms(verify_started_ms, self.plan.tables, conditions.skew_margin_ms)
        kept = None if kept_since_ms is None else kept_since_ms + conditions.skew_margin_ms
        self.result.update(verified_since_ms=since, kept_since_ms=kept)
        with contextlib.ExitStack() as stack:
            with self.step("sessions") as d:
                self.open_sessions(stack, d)
                d.update(source_open_s=self.src_shell.opened_s, target_open_s=self.tgt_shell.opened_s)
            try:
                with self.step("prepare_fence") as d:
                    self.prepare_fence(d)
                with self.step("lag_gate") as d:
                    self.wait_lag(d)
                with self.step("live_pass") as d:
                    self.plan_check(d)
                    live_started = _now_ms(self.clock)
                    d.update(self.check(since, kept, live=True))
                    self.result["live_pass"] = dict(d)
                    if not d["ok"]:
                        raise CutoverAborted("verification", "the live pass before the freeze: "
                                             + "; ".join(d["reasons"]), {"fence": "not applied", "changed": False})
            except BaseException as e:  # before the fence: only the canary's grants to take back
                said = self.revoke_canary()
                if isinstance(e, CutoverAborted) and said:
                    e.state["canary"] = said
                raise
            frozen_since = max(0, live_started - conditions.skew_margin_ms)
            fence_started = self.clock()
            self.result["fence_started"] = fence_started
            try:
                with self.step("fence") as d:
                    self.apply_fence(d)
                self._roll_started = self.clock()
                roll: dict[str, Any] = {}
                drain: dict[str, Any] = {}
                self.on_step("drain", "running", None)
                try:
                    self.roll_and_drain(fence_started, roll, drain)
                except BaseException as e:
                    self.on_step("drain", "failed", {**drain, "error": str(e)})
                    raise
                self.result.setdefault("details", {}).update(wal_roll=roll, drain=drain)
                self.on_step("drain", "success", drain)
                with self.step("bounded_check") as d:
                    d.update(self.check(frozen_since, kept, live=False))
                    self.result["bounded_check"] = dict(d)
                    if not d["ok"]:
                        raise CutoverAborted("verification", "the bounded check in the freeze: "
                                             + "; ".join(d["reasons"]))
                if self.unfence_joined and self.refence_joined:  # before the switch: nobody is refused after it
                    with self.step("lift_joined_fence") as d:
                        d["statements"] = len(self.unfence_joined)
                        self.joined_lifted = True  # even half done: an abort puts the whole fence back
                        self.on_joined(self.unfence_joined)
                if past_deadline(fence_started, self.clock(), conditions):
                    raise CutoverAborted("freeze_deadline", f"the fenced steps took {self.clock() - fence_started:.1f}s"
                                                            f", more than max_freeze_s={conditions.max_freeze_s:g}")
                with self.step("switch"):
                    self.switch_started = True
                    try:
                        self.switch("switch")
                    except Exception as e:
                        raise CutoverAborted("switch", f"the switch command failed: {e}") from e
            except CutoverAborted as e:
                e.state.update(self._abort(e))
                raise
            except Exception as e:
                state = self._abort(CutoverAborted("error", str(e)))
                raise CutoverAborted("error", f"{type(e).__name__}: {e}", state) from e
            self.result["switched_at"] = self.clock()
            self.result.update(timeline(self.steps))
            roles = self.roles
            try:
                if self.unfence_joined and not self.joined_lifted:  # a plan from before refence_statements:
                    # the joined side's principals get WRITE back first thing after the switch
                    with self.step("lift_joined_fence") as d:
                        d["statements"] = len(self.unfence_joined)
                        self.on_joined(self.unfence_joined)
                # Unfrozen first: a READONLY region refuses the kept peer's edits ("region is read only"),
                # and the sink's retries can leave the other side behind long after the unfreeze.
                if self.options.freeze_method == READONLY and self.options.unfreeze_after_switch:
                    with self.step(roles.unfreeze_step) as d:
                        d["readonly"] = self.readonly_read_back(self.src_shell.run(self.unfence,
                                                                                   timeout_s=600).stdout)
                with self.step(roles.enable_step) as d:
                    self.enable_reverse(d)
                if self.canary_granted:
                    with self.step("revoke_canary") as d:
                        d["canary"] = self.revoke_canary(strict=True)
                with self.step(roles.lag_step) as d:
                    self.wait_reverse(d)
            except Exception as e:
                details = self.result.get("details", {})
                joined_write = "given back" if "lift_joined_fence" in details else "maybe still fenced by ACL"
                raise PostSwitchError(
                    f"after the switch (the clients write to the {roles.joined}; nothing is undone): "
                    f"{type(e).__name__}: {e}. State: the {roles.fenced} tables {', '.join(self.plan.tables)} are "
                    f"{'READONLY' if self.options.freeze_method == READONLY else 'fenced by ACL'}"
                    + (f"; the {roles.joined}'s WRITE {joined_write}" if self.unfence_joined else "")
                    + f"; {roles.kept} {self.plan.reverse_peer_id} on the {roles.joined} "
                    f"{'ENABLED' if roles.enable_step in details else 'maybe DISABLED'}; "
                    f"{roles.drained} {self.plan.peer_id} ENABLED (drained). Enable the {roles.kept} (python -m "
                    f"hbase_migration peer enable --source <{roles.joined} conn> --peer-id "
                    f"{self.plan.reverse_peer_id}) and, with READONLY, unfreeze the {roles.fenced} (python -m "
                    f"hbase_migration freeze --source <{roles.fenced} conn> --tables {','.join(self.plan.tables)} "
                    "--unfreeze)") from e
        self.result.update(timeline(self.steps))
        return self.result

    def on_joined(self, batch: tuple[str, ...]) -> None:
        """ACL batches (`unfence_joined`: a rollback's source given its WRITE back, its cut-over's recorded grants
        without merge, so a re-run changes nothing more; or `refence_joined`: taken away again) run on the joined
        side through its session (a shell of their own if it died); raises when a change failed."""
        from hbase_migration.clusters import channels
        from hbase_migration.migration import freeze

        statements = freeze.jruby_admin_statements() + list(batch)
        out = None
        if self.tgt_shell is not None and self.tgt_shell.alive and not isinstance(self.tgt_shell, OneShotShell):
            try:
                out = self.tgt_shell.run(statements, timeout_s=600).stdout
            except Exception as e:  # the session died: one shell call of its own below
                log.warning("the ACL batch on the %s in the session failed (%s): a new shell", self.roles.joined, e)
        if out is None:
            out = channels.shell(self.target, statements, timeout_s=max(self.target.shell_timeout_s, 600.0)).stdout
        _changed, failed = freeze.parse_acl_batch(out)
        if failed:
            raise RuntimeError(f"{len(failed)} ACL change(s) on the {self.roles.joined} failed: "
                               + "; ".join(failed[:5]))

    def revoke_canary(self, strict: bool = False) -> str:
        """The canary's grants taken back (ACL); what was done, or (not `strict`) why it could not be."""
        from hbase_migration.migration import freeze

        if not self.canary_granted:
            return ""
        statement = freeze.acl_batch_statement((), self.canary_granted)
        try:
            if self.src_shell is not None and self.src_shell.alive:
                out = self.src_shell.run([statement]).stdout
            else:
                from hbase_migration.clusters import channels

                out = channels.shell(self.source, freeze.jruby_admin_statements() + [statement]).stdout
            _changed, failed = freeze.parse_acl_batch(out)
            if failed:
                raise RuntimeError("; ".join(failed))
        except Exception as e:
            said = (f"the canary {self.options.canary}'s grants NOT revoked ({type(e).__name__}: {e}): revoke them by "
                    f"hand (revoke '{self.options.canary_user}', '<table>' for each of {', '.join(self.plan.tables)})")
            if strict:
                raise RuntimeError(said) from e
            log.error("%s", said)
            return said
        self.canary_granted = []
        return f"the canary {self.options.canary}'s grants revoked"

    def _abort(self, error: CutoverAborted) -> dict[str, Any]:
        state: dict[str, Any] = {"changed": self.fenced}
        if self.joined_lifted:  # first: fail closed (both sides fenced a moment, never both writable)
            try:
                self.on_joined(self.refence_joined)
                state["joined_fence"] = f"the {self.roles.joined}'s WRITE taken away again, as before the window"
            except Exception as e:
                state["joined_fence"] = (
                    f"NOT PUT BACK ({type(e).__name__}: {e}): the {self.roles.joined}'s principals can write to "
                    f"{', '.join(self.plan.tables)} while the clients stay on the {self.roles.fenced}; take their "
                    "WRITE away by hand (the statements are this run's plan's refence_statements)")
        try:
            state["fence"] = self.lift_fence()
        except Exception as e:
            state["fence"] = (f"NOT LIFTED ({type(e).__name__}: {e}): the {self.roles.fenced} tables "
                              f"{', '.join(self.plan.tables)} are still "
                              f"{'READONLY' if self.options.freeze_method == READONLY else 'fenced by ACL'}; lift it "
                              "by hand (python -m hbase_migration freeze --unfreeze for READONLY)")
        if self.switch_started:
            try:
                self.switch("abort")
                state["switch"] = "switch command run again with HBASE_CUTOVER_PHASE=abort"
            except Exception as e:
                state["switch"] = f"switch command with HBASE_CUTOVER_PHASE=abort failed: {e}"
        if self.canary_granted:
            state["canary"] = self.revoke_canary()
        early = (self.result.get("bounded_check") or self.result.get("live_pass") or {}).get("counts", {})
        state["early_target_writes"] = int(early.get("early_write", 0))
        roles = self.roles
        state["kept_peer" if roles.kind != "cut-over" else "reverse_peer"] = (
            f"{roles.kept} {self.plan.reverse_peer_id} left DISABLED on the {roles.joined}")
        state["drained_peer" if roles.kind != "cut-over" else "forward_peer"] = (
            f"{roles.drained} {self.plan.peer_id} ENABLED on the {roles.fenced}, as before")
        self.result["aborted"] = {"condition": error.condition, "message": str(error), **state}
        self.result.update(timeline(self.steps))
        log.error("%s window aborted (%s): %s; state: %s; the clients stay on the %s", roles.kind, error.condition,
                  error, state, roles.fenced)
        return {**state, "timeline": timeline(self.steps)}


def run_window(source: "Cluster", target: "Cluster", plan: "SwitchPlan", options: WindowOptions, *,
               verify_started_ms: Mapping[str, int | None], kept_since_ms: int | None,
               switch: Callable[[str], None], on_step: Callable[[str, str, Any], None] | None = None,
               clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
               roles: Roles = CUTOVER_ROLES, unfence_joined: tuple[str, ...] = (),
               refence_joined: tuple[str, ...] = ()) -> dict[str, Any]:
    """The window (module doc). `verify_started_ms`: per table, when its last full verification started (the
    bounded checks start there); `kept_since_ms`: when the reverse peer was created (target writes from then on
    are kept). `switch(phase)`: moves the clients ("switch") or back ("abort"); raising means it failed.

    `roles`: the cut-over's (default) or the rollback's (`ROLLBACK_ROLES`: `source` is then the migration's target,
    `plan` from `cutover.rollback_window_plan`); `unfence_joined`: statements run (JRuby Admin) on `target` just
    before the switch (a rollback of an ACL cut-over: the source's WRITE given back), `refence_joined` on an abort
    after them (without `refence_joined`: `unfence_joined` first thing after the switch).

    Returns the result (timeline with each step's seconds and the freeze's shares, the checks, the fence).
    Raises `CutoverAborted` (with `.state`) when an abort condition stopped it, `PostSwitchError` when a step
    after the switch failed."""
    return _Window(source, target, plan, options, switch, on_step, clock, sleep, roles,
                   unfence_joined, refence_joined).run(verify_started_ms, kept_since_ms)


def command_switch(command: str, env: Mapping[str, str], timeout_s: float = 120.0) -> Callable[[str], None]:
    """`switch(phase)` running the operator's `switch_command` (shell-split, no shell) with
    `cutover_plan.switch_environment` and `HBASE_CUTOVER_PHASE=phase`; exit 0 = done, else raises with its output."""
    import os
    import shlex
    import subprocess

    argv = shlex.split(command)
    if not argv:
        raise ValueError("switch_command is empty")

    def switch(phase: str) -> None:
        proc = subprocess.run(argv, env={**os.environ, **env, "HBASE_CUTOVER_PHASE": phase}, capture_output=True,
                              text=True, timeout=timeout_s)
        log.info("switch command (%s): exit %d %s", phase, proc.returncode, (proc.stdout + proc.stderr)[-300:])
        if proc.returncode != 0:
            raise RuntimeError(f"`{command}` (HBASE_CUTOVER_PHASE={phase}) exited {proc.returncode}: "
                               f"{(proc.stderr or proc.stdout).strip()[-500:]}")

    return switch
