"""Stopping a test service started in a process group of its own (start_new_session=True): its children go too."""
from __future__ import annotations

import os
import signal
import subprocess


def stop_group(process: subprocess.Popen, timeout: float) -> None:
    """SIGTERM to the group, SIGKILL after `timeout` seconds; nothing if the process has already ended."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
