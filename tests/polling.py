"""Waiting in tests: poll a condition with a deadline instead of sleeping a fixed time."""
import time


def wait_for(predicate, timeout: float = 60.0, what: str = "condition", interval: float = 0.05):
    """`predicate()`'s first truthy result, polled every `interval` seconds (checked once more at the deadline);
    AssertionError naming `what` when it never comes."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
