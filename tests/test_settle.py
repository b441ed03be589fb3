"""The warm-up's rule (scripts/settle.py): on until the last five calls' median stops moving,
bounded; a clock the test drives, so the rule is seen call by call."""

from kernel_bakeoff.scripts import settle


class Calls:
    """Each call 'takes' the next time of `times_ms` on a clock that only the calls move."""

    def __init__(self, times_ms):
        self.times, self.ns, self.made = list(times_ms), 0, 0

    def call(self):
        self.ns += int(self.times[min(self.made, len(self.times) - 1)] * 1e6)
        self.made += 1

    def now(self):
        return self.ns


def warm(times_ms, least=9, most_s=10.0):
    calls = Calls(times_ms)
    seen = []
    took = settle.warm(calls.call, lambda: seen.append(1), least, most_s, calls.now)
    assert len(seen) == calls.made  # the lead-in before every call, as before every sample
    return took


def test_warm_up_goes_on_until_the_calls_settle():
    slow_start = [3.5, 2.2, 1.6, 1.3, 1.1, 1.0, 0.95, 0.9, 0.85] + [0.8] * 30
    took = warm(slow_start)
    assert len(took) > 9  # the fixed count ended while the calls still sped up
    assert settle.settled(took) and not settle.settled(took[:-1])
    assert took[-1] == 0.8


def test_calls_settled_within_the_fixed_count_stop_there():
    assert len(warm([1.0] * 50, least=12)) == 12


def test_calls_that_never_settle_stop_at_the_bound():
    alternating = [1.0, 3.0, 1.0, 3.0, 9.0, 1.0, 5.0, 1.0] * 40  # medians that keep moving
    took = warm(alternating, least=9, most_s=0.05)
    assert 9 < len(took) < 40  # 50 ms beyond the first nine calls, not the 200-call bound
    assert len(warm(alternating, least=9, most_s=0.0)) == 9  # BAKEOFF_SETTLE_S=0: the count


def test_the_median_rule():
    assert not settle.settled([1.0] * 9)  # two windows of five are needed
    assert settle.settled(
        [2.0] * 5 + [2.09, 1.0, 2.09, 2.05, 2.1]
    )  # 4.5%: one slow call moves nothing
    assert not settle.settled([2.0] * 5 + [1.8] * 5)  # 10%
