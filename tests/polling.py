"""Waiting in tests: poll a condition with a deadline instead of sleeping a fixed time."""
import time


def wait_for(predicate, timeout: float = 60.0, what: str = "condition", interval: float = 0.05,
             ignore: tuple[type[BaseException], ...] = ()):
    """`predicate()`'s first truthy result, polled every `interval` seconds (checked once more at the deadline);
    AssertionError naming `what` when it never comes. An exception in `ignore` counts as "not yet" (a page
    between two loads, a server still starting); the last one is named in the timeout's message."""
    deadline = time.monotonic() + timeout
    last_error = None
    while True:
        try:
            result = predicate()
        except ignore as e:
            result, last_error = None, e
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}"
                                 + (f" (last error: {last_error!r})" if last_error is not None else ""))
        time.sleep(interval)
