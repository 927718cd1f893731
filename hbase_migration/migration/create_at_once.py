"""Many tables created at once through HBase's own shell.

The shell's `create` waits for its CreateTableProcedure to finish (HBaseAdmin's future polls the master with a
growing pause): 1.16 s a table on the test bed, 347 s for 300 tables, while the master runs up to 16 procedures
side by side (`hbase.master.procedure.threads`). So a batch of `create` statements runs with each `create`
submitted without waiting (`Admin#createTableAsync`, given the very descriptor and split keys the shell's own
`create` built from the same statement), then one statement waits for them all and names every table that
failed: 60 tables in 4.2 s instead of 78 s on the bed (HBase 2.6.4).

`PRELUDE` is Ruby for the shell's JRuby: it prepends a module to `Hbase::Admin` whose `create`, while
`$hm_async_creates` is set, hands the shell's code an Admin whose `createTable` is `createTableAsync` (every other
call goes to the real Admin), and keeps the futures. Only the statements of a batch run that way: `statements()`
sets the flag before them and the waiting statement clears it. A shell where this cannot work (not JRuby: the
stand-in; an Admin whose `createTableAsync` returns no Future: HBase 1.x) fails the prelude, and the caller creates
the tables one by one as before (`supported`).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

READY = "hm-async-creates: " + "ready"  # what the prelude prints (built so the statement's echo cannot match)

PRELUDE = (
    'unless defined?(HmAsyncCreate); '
    'unless java.lang.Class.forName("org.apache.hadoop.hbase.client.Admin").getMethods.any? { |m| '
    'm.getName == "createTableAsync" && m.getReturnType.getName == "java.util.concurrent.Future" }; '
    'raise "this HBase client has no createTableAsync returning a Future"; end; '
    'class HmAsyncAdmin; '
    'def initialize(real, name, pending); @real = real; @name = name; @pending = pending; end; '
    'def createTable(*args); @pending << [@name, @real.createTableAsync(*args)]; nil; end; '
    'def method_missing(name, *args, &block); @real.send(name, *args, &block); end; '
    'def respond_to_missing?(name, all = false); @real.respond_to?(name, all); end; end; '
    'module HmAsyncCreate; def create(table_name, *args); return super unless $hm_async_creates; '
    'real = @admin; @admin = HmAsyncAdmin.new(real, table_name, ($hm_pending_creates ||= [])); super; '
    'ensure; @admin = real if real; end; end; '
    'Hbase::Admin.prepend(HmAsyncCreate); end; '
    'puts "hm-async-creates: " + "ready"'
)


def await_statement(timeout_s: float) -> str:
    """Ruby that waits for every create submitted since the flag was set (one deadline for all) and raises one
    error naming each table whose procedure failed or did not finish in time, after waiting for the rest."""
    return (
        '$hm_async_creates = false; hm_failed = []; '
        f'hm_deadline = Time.now + {int(timeout_s)}; '
        '($hm_pending_creates || []).each { |name, future| begin; '
        'future.get([(hm_deadline - Time.now).ceil, 1].max, java.util.concurrent.TimeUnit::SECONDS); '
        'rescue StandardError, Java::JavaLang::Throwable => e; hm_failed << "#{name}: #{e.message}"; end }; '
        'hm_created = ($hm_pending_creates || []).size - hm_failed.size; $hm_pending_creates = []; '
        'raise "#{hm_failed.size} table(s) not created: " + hm_failed.join("; ") unless hm_failed.empty?; '
        'puts "hm-async-creates: #{hm_created} created"'
    )


def statements(creates: Sequence[str], timeout_s: float) -> list[str]:
    """`creates` (the shell's own `create` statements, namespaces' too) run at once: the prelude (a no-op when
    this shell has it already), the flag, the statements, the wait."""
    return [PRELUDE, "$hm_async_creates = true", *creates, await_statement(timeout_s)]


def supported(target: "Cluster") -> bool:
    """Whether the target's shell can create tables at once: the prelude run there, on its own. False (logged
    with the shell's words) when it refused; an unreachable shell or master raises, as any shell call does."""
    from hbase_migration.clusters import channels
    from hbase_migration.clusters.reachability import unreachable
    from hbase_migration.clusters.shell import ShellCommandError

    try:
        out = channels.shell(target, [PRELUDE], timeout_s=max(target.shell_timeout_s, 60.0))
    except ShellCommandError as e:
        if unreachable(e):
            raise
        log.info("%s: creating tables one by one (its shell cannot submit them at once: %s)", target.name,
                 str(e).splitlines()[-1][:300])
        return False
    return READY in out.stdout
