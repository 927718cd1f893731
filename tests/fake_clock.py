"""A time.monotonic/time.sleep pair for unit tests of pacing logic: sleeping advances time, nothing waits."""


class FakeClock:
    def __init__(self, start: float = 0.0):
        self.now = start
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(round(s, 6))
        self.now += s
