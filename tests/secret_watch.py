"""Where a secret must never show: every process's command line (what `ps` shows anyone on the machine), sampled
while a run goes on, and every file a run writes outside its secrets directory (logs, state, Spark's event logs)."""
from __future__ import annotations

import json
import threading
from pathlib import Path

from sqlalchemy.engine import make_url


class CommandLines:
    """A thread that reads every process's /proc/PID/cmdline every `interval_s` while the `with` block runs;
    `seen` holds each distinct command line (arguments joined by spaces)."""

    def __init__(self, interval_s: float = 0.25) -> None:
        self.interval_s = interval_s
        self.seen: set[str] = set()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cmdline-sampler", daemon=True)

    def _sample(self) -> None:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    raw = (entry / "cmdline").read_bytes()
                except OSError:  # gone between the listing and the read
                    continue
                if raw:
                    self.seen.add(raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace"))
        self.samples += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval_s)

    def __enter__(self) -> "CommandLines":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def containing(self, secrets: dict[str, str]) -> list[str]:
        """The names of the secrets (name -> value) some command line held."""
        return sorted(name for name, value in secrets.items() if any(value in line for line in self.seen))


def deployment_secrets(secrets_dir: Path) -> dict[str, str]:
    """The secret values of a deployment's secrets directory (deploy/airflow.py): each file's content, the
    password alone of a file holding a URL, each user's password of passwords.json."""
    found: dict[str, str] = {}
    for path in sorted(secrets_dir.iterdir()):
        text = path.read_text().strip()
        if path.name == "passwords.json":
            found.update({f"password of {user}": pw for user, pw in json.loads(text).items()})
        elif "://" in text:
            found[f"password in {path.name}"] = make_url(text).password or ""
        else:
            found[path.name] = text
    return {name: value for name, value in found.items() if value}


def files_containing(root: Path, secrets: dict[str, str], skip: Path) -> list[tuple[str, str, int]]:
    """(file, the secret's name, the file's permission bits) for every file under `root`, outside `skip`, that
    holds one of `secrets` (name -> value; the value is never in the answer: a failing test prints it)."""
    wanted = {name: value.encode() for name, value in secrets.items()}
    hits = []
    for path in root.rglob("*"):
        if not path.is_file() or path.is_symlink() or skip in path.parents:
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        hits += [(str(path), name, path.stat().st_mode & 0o777) for name, value in wanted.items() if value in data]
    return hits
