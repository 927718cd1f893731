"""The bed's client JVMs: the real `hbase shell` and HDFS's DFSAdmin, run to their end for the caller.

Each costs a JVM's start-up (6 to 10 s on two cores: what makes a real-HBase test slow), so each is on record in
`<workdir>/clients.log` (when, kind, seconds, exit status, what it ran). A client carries
`-Drealhbase.client.workdir=`: no part of the bed, `down` leaves it alone.
"""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Callable

from realhbase import cds, config, roles
from realhbase.config import CLUSTERS, HOST
from realhbase.jars import Jars, RealHBaseError

SHELL_COMPAT = Path(__file__).resolve().parent / "ruby" / "shell_compat.rb"


class Clients:
    """Client JVMs of the clusters under `workdir`. `jars` is called when a JVM is to start (the jars are resolved
    on first use); `security` is the bed's (realhbase/security.py)."""

    def __init__(self, workdir: Path, jars: Callable[[], Jars], security):
        self.workdir = workdir
        self._jars = jars
        self.security = security

    def check_cluster(self, name: str) -> None:
        if name not in CLUSTERS:
            raise ValueError(f"unknown cluster {name!r} (known: {', '.join(CLUSTERS)})")

    def command(self, name: str, main: str, args: list[str], heap: str = config.HEAP["tool"],
                classpath_tail: list[str] = (), cds_flags: list[str] = ()) -> list[str]:
        """A client JVM of cluster `name`: its conf/ on the class path, the cluster's security flags."""
        self.check_cluster(name)
        d = self.workdir / name
        if not (d / "conf" / "hbase-site.xml").exists():
            raise RealHBaseError(f"realhbase: cluster {name} has no configuration under {self.workdir} "
                                 f"(run `python -m realhbase up --workdir {self.workdir}`)")
        jars = self._jars()
        classpath = [*jars.classpath, *classpath_tail, str(jars.launcher_dir / "launcher.jar"),
                     str(jars.launcher_dir), str(d / "conf")]
        return roles.jvm_command(jars.java, classpath, self.workdir, name, d, "client", heap, main, args,
                                 [*self.security.jvm_flags(name, d, client=True), *cds_flags], client=True,
                                 log_config="log4j2-client.properties")

    def shell_java_command(self, name: str, args: list[str], cds_flags: list[str] = ()) -> tuple[list[str], dict]:
        """The real `hbase shell` as bin/hbase runs it: JarBootstrapMain (jar-bootstrap.rb in hbase-shell's jar),
        JRUBY_OPTS=-X+O; the cluster's conf/ on the class path. IRBRC=ruby/shell_compat.rb: the 2.4 shell's Ruby on
        HBase 2.6's JRuby (see the file)."""
        cmd = self.command(name, "org.jruby.JarBootstrapMain", args, heap=config.HEAP["shell"],
                           classpath_tail=self._jars().shell_extra, cds_flags=cds_flags)
        env = {**os.environ, "JRUBY_OPTS": "-X+O", "IRBRC": str(SHELL_COMPAT)}
        return cmd, env

    def shell(self, name: str, script: str | None, args: list[str] = ("-n",), timeout: float | None = 300.0,
              capture: bool = True) -> subprocess.CompletedProcess:
        """`hbase shell -n` with `script` on standard input (exit status: 0, or non-zero on the first error).
        `script=None, capture=False`: the shell reads and writes this process's standard streams."""
        _, env = self.shell_java_command(name, list(args))  # checks the cluster before anything runs
        env.update(self.security.client_env(name, self.workdir / name))
        return self.run("shell", lambda flags: self.shell_java_command(name, list(args), flags)[0], env=env,
                        script=script, capture=capture, timeout=timeout)

    def dfsadmin(self, name: str, namenode_port: int, op: list[str]) -> subprocess.CompletedProcess:
        fs = f"-Dfs.defaultFS=hdfs://{HOST}:{namenode_port}"
        env = {**os.environ, **self.security.client_env(name, self.workdir / name, own_ticket_cache=False)}
        return self.run("tool", lambda flags: self.command(name, "org.apache.hadoop.hdfs.tools.DFSAdmin", [fs, *op],
                                                           cds_flags=flags), timeout=120, env=env)

    def run(self, kind: str, command: Callable[[list[str]], list[str]], env=None, script: str | None = None,
            capture: bool = True, timeout: float | None = None) -> subprocess.CompletedProcess:
        """A client JVM to its end; `command(cds_flags)` builds its command line. Without `capture` it shares this
        process's standard input and output (the CLI's `shell`)."""
        cds_dir = self._jars().cds_dir
        cds_flags, dump = cds.flags(cds_dir, kind)
        pipe = subprocess.PIPE if capture else None
        started = time.monotonic()
        proc = subprocess.Popen(command(cds_flags), env=env, text=True, stdout=pipe, stderr=pipe,
                                stdin=subprocess.PIPE if script is not None else None)
        if dump:
            cds.dumping(cds_dir, kind, proc.pid)
        try:
            out, err = proc.communicate(script, timeout=timeout)
        except BaseException:
            proc.kill()
            proc.wait()
            cds.settle(cds_dir, {proc.pid})
            self._record(kind, started, "killed", script, proc.args)
            raise
        cds.settle(cds_dir)
        self._record(kind, started, proc.returncode, script, proc.args)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def _record(self, kind: str, started: float, status, script: str | None, args) -> None:
        """One line per client JVM in <workdir>/clients.log (when, kind, seconds, exit status, what it ran: a
        script's first statement or the tool's arguments)."""
        what = (script or "").strip().splitlines()[:1] or [" ".join(str(a) for a in list(args)[-3:])]
        line = f"{time.strftime('%FT%T')}\t{kind}\t{time.monotonic() - started:.1f}\t{status}\t{what[0][:160]}\n"
        try:
            with open(self.workdir / "clients.log", "a", encoding="utf-8") as f:
                f.write(line)
        except OSError:
            pass  # the record is for people; a workdir being removed must not fail the client's call
