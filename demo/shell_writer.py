"""Clients writing as a user of their own: a JRuby loop in an HBase shell JVM (HADOOP_USER_NAME: simple
authentication; the Thrift gateways run as the HBase superuser and would pass every permission check, so an ACL
fence is measured with this writer, not demo/switching_writer.py's).

It writes unique rows (one column `f:v`, the cluster's name as value) to the cluster a switch file names (what a
cut-over's `switch_command` writes), round the tables, printing each acknowledgement and refusal with its instant.
A refusal by a fence (`Insufficient permissions`, `region is read only`) is not retried on that cluster: the loop
waits to be switched, as a client told "writes are frozen" would; with `retry_refused_s` it tries that cluster
again after so long (a client switched to a side whose WRITE is given back only after the switch, as an ACL
rollback does, is refused there at first). `log()` gives the lines as
demo/switching_writer.py's WriterLog, so its `freeze_figures` and `lost_writes` apply.
"""
from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Mapping, Sequence

from demo.switching_writer import FENCE_ERRORS, Ack, WriterLog

# IRB reads one statement per line: each loop is joined onto one line.
SCRIPT = "\n".join([
    "java_import org.apache.hadoop.hbase.HBaseConfiguration",
    "java_import org.apache.hadoop.hbase.TableName",
    "java_import org.apache.hadoop.hbase.client.ConnectionFactory",
    "java_import org.apache.hadoop.hbase.client.Put",
    "java_import org.apache.hadoop.hbase.util.Bytes",
    "hm_conns = {}",
    "; ".join(["PARENTS.each { |c, parent| conf = HBaseConfiguration.create",
               'conf.set("zookeeper.znode.parent", parent)',
               "(CONFS[c] || {}).each { |k, v| conf.set(k, v) }",
               'conf.setInt("hbase.client.retries.number", 3)',
               "hm_conns[c] = ConnectionFactory.createConnection(conf) }"]),
    "hm_tables = TABLES", "hm_switch = SWITCH", "hm_stop = STOP", "hm_seq = 0", "hm_refused_on = nil",
    "hm_refused_at = 0.0",
    "; ".join([
        "until File.exist?(hm_stop) do active = File.read(hm_switch).strip",
        "if hm_refused_on == active && (RETRY < 0 || Time.now.to_f - hm_refused_at < RETRY) then sleep 0.02; next; end",
        "hm_refused_on = nil",
        "hm_seq += 1", "t = hm_tables[hm_seq % hm_tables.length]",
        'row = ((hm_seq * 2654435761) % 4294967296).to_s(16).rjust(8, "0") + "-" + hm_seq.to_s',
        "begin",
        'hm_conns[active].getTable(TableName.valueOf(t)).put(Put.new(Bytes.toBytes(row)).addColumn('
        'Bytes.toBytes("f"), Bytes.toBytes("v"), Bytes.toBytes(active)))',
        'puts "ACK " + active + " " + java.lang.System.currentTimeMillis.to_s + " " + t + " " + row',
        "rescue Exception, java.lang.Throwable => e",
        "m = e.message.to_s",
        'puts "REFUSED " + active + " " + java.lang.System.currentTimeMillis.to_s + " " + m.gsub(/\\s+/, " ")[0, 200]',
        'if m.include?("Insufficient permissions") || m.include?("is read only") then hm_refused_on = active; '
        'hm_refused_at = Time.now.to_f; end',
        "sleep 0.05", "end", "sleep INTERVAL", "end"]),
    'puts "WRITER DONE"', ""])


class ShellWriter:
    def __init__(self, java_command: tuple[list[str], dict[str, str]], parents: Mapping[str, str],
                 tables: Sequence[str], switch_file: Path, *, user: str = "app", interval_s: float = 0.03,
                 confs: Mapping[str, Mapping[str, str]] | None = None, retry_refused_s: float | None = None):
        """`confs`: per cluster, settings over the shell's hbase-site (a secured cluster's server principals)."""
        self.command, self.env = java_command
        self.confs = {c: dict(v) for c, v in (confs or {}).items()}
        self.parents, self.tables, self.switch_file, self.user = dict(parents), list(tables), switch_file, user
        self.stop_file = switch_file.with_name(switch_file.name + ".stop")
        self.interval_s = interval_s
        self.retry_refused_s = retry_refused_s
        self.lines: list[str] = []
        self.proc: subprocess.Popen | None = None

    def start(self, first_ack_within_s: float = 300) -> "ShellWriter":
        """Start the loop and wait for its first acknowledgement (its JVM start); RuntimeError with its last lines
        when none comes."""
        self.stop_file.unlink(missing_ok=True)
        parents = "{" + ", ".join(f"{json.dumps(k)} => {json.dumps(v)}" for k, v in self.parents.items()) + "}"
        confs = "{" + ", ".join(f"{json.dumps(c)} => {{" + ", ".join(f"{json.dumps(k)} => {json.dumps(v)}"
                                                                      for k, v in kv.items()) + "}"
                                for c, kv in self.confs.items()) + "}"
        script = (SCRIPT.replace("CONFS", confs).replace("PARENTS", parents)
                  .replace("TABLES", json.dumps(self.tables)).replace("SWITCH", json.dumps(str(self.switch_file)))
                  .replace("STOP", json.dumps(str(self.stop_file))).replace("INTERVAL", repr(self.interval_s))
                  .replace("RETRY", repr(-1.0 if self.retry_refused_s is None else float(self.retry_refused_s))))
        self.proc = subprocess.Popen(self.command, env={**self.env, "HADOOP_USER_NAME": self.user},
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, bufsize=1)
        threading.Thread(target=lambda: [self.lines.append(x.rstrip()) for x in self.proc.stdout],
                         daemon=True, name="shell-writer").start()
        self.proc.stdin.write(script)
        self.proc.stdin.close()  # the shell ends at the end of its input, once the loop has seen the stop file
        deadline = time.monotonic() + first_ack_within_s
        while not any(x.startswith("ACK ") for x in list(self.lines)):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the writer (user {self.user}) acknowledged nothing: {list(self.lines)[-8:]}")
            time.sleep(0.2)
        return self

    def log(self) -> WriterLog:
        """The acknowledgements and refusals so far (demo/switching_writer.py's WriterLog)."""
        log = WriterLog()
        for line in list(self.lines):
            parts = line.split(" ", 3)
            if len(parts) == 4 and parts[0] == "ACK" and " " in parts[3]:
                at = int(parts[2]) / 1000
                table, row = parts[3].split(" ", 1)
                log.acks.append(Ack(parts[1], table, row.encode(), at, at))
            elif len(parts) == 4 and parts[0] == "REFUSED":
                fenced = any(marker in parts[3].lower() for marker in FENCE_ERRORS)
                (log.refusals if fenced else log.errors).append((parts[1], int(parts[2]) / 1000, parts[3]))
        return log

    def stop(self, timeout_s: float = 120) -> WriterLog:
        if self.proc is not None:
            self.stop_file.write_text("stop")
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        return self.log()
