"""The NGRPO switch: modes, hysteresis, the moving window, checkpoints."""

import json

import pytest

from algo.ngrpo_switch import NGRPOSwitch, SwitchEvent


def run(switch, fracs, start=0):
    return [switch.update(start + i, f) for i, f in enumerate(fracs)]


def test_hysteresis_yields_exactly_the_expected_events():
    sw = NGRPOSwitch("dynamic", on_above=0.30, off_below=0.20, window=1)
    fracs = [0.10, 0.25, 0.30, 0.31, 0.25, 0.20, 0.19, 0.25, 0.29, 0.50, 0.21, 0.0]
    #        off   off   off   ON    on    on    OFF   off   off   ON    on    OFF
    active = run(sw, fracs)
    assert active == [False, False, False, True, True, True, False, False, False, True, True, False]
    assert sw.events == [
        SwitchEvent(3, True, pytest.approx(0.31)),
        SwitchEvent(6, False, pytest.approx(0.19)),
        SwitchEvent(9, True, pytest.approx(0.50)),
        SwitchEvent(11, False, pytest.approx(0.0)),
    ]


def test_moving_window_smooths_spikes():
    sw = NGRPOSwitch("dynamic", window=3)
    # A one-step spike of 0.6 does not switch; window means:
    # 0.1, 0.1, 0.2667, 0.4 (on), 0.4333, 0.4, 0.2333 (stays on), 0.1667 (off)
    active = run(sw, [0.1, 0.1, 0.6, 0.5, 0.2, 0.5, 0.0, 0.0])
    assert active == [False, False, False, True, True, True, True, False]
    assert [(e.step, e.active) for e in sw.events] == [(3, True), (7, False)]
    assert sw.events[0].window_value == pytest.approx((0.1 + 0.6 + 0.5) / 3)
    assert sw.events[1].window_value == pytest.approx((0.5 + 0.0 + 0.0) / 3)


def test_window_includes_the_current_step():
    # The decision for step t sees frac_t: NGRPO can act on the same batch.
    sw = NGRPOSwitch("dynamic", window=5)
    assert sw.update(0, 0.9) is True
    assert sw.window_value == pytest.approx(0.9)


def test_fixed_modes_never_switch():
    off, on = NGRPOSwitch("off"), NGRPOSwitch("on")
    fracs = [0.0, 1.0, 0.5, 0.0]
    assert run(off, fracs) == [False] * 4 and off.events == []
    assert run(on, fracs) == [True] * 4 and on.events == []
    assert on.active and not off.active


def test_equal_thresholds_use_strict_inequalities():
    sw = NGRPOSwitch("dynamic", on_above=0.3, off_below=0.3, window=1)
    assert run(sw, [0.3, 0.31, 0.3, 0.29]) == [False, True, True, False]


def test_state_dict_round_trip_resumes_identically():
    fracs = [0.1, 0.5, 0.6, 0.2, 0.1, 0.0, 0.4, 0.9, 0.1, 0.1]
    whole = NGRPOSwitch("dynamic", window=3)
    expected = run(whole, fracs)

    first = NGRPOSwitch("dynamic", window=3)
    got = run(first, fracs[:5])
    state = json.loads(json.dumps(first.state_dict()))  # checkpoints store it as JSON
    resumed = NGRPOSwitch("off")
    resumed.load_state_dict(state)
    got += run(resumed, fracs[5:], start=5)
    assert got == expected
    assert resumed.events == whole.events


def test_from_config():
    from configs.algorithm import NGRPOConfig

    sw = NGRPOSwitch.from_config(NGRPOConfig(mode="dynamic", on_above=0.5, off_below=0.1, window=2))
    assert (sw.mode, sw.on_above, sw.off_below, sw.window) == ("dynamic", 0.5, 0.1, 2)


@pytest.mark.parametrize(
    "kwargs",
    [dict(mode="sometimes"), dict(on_above=0.1, off_below=0.2), dict(window=0), dict(on_above=1.5)],
)
def test_invalid_settings(kwargs):
    with pytest.raises(ValueError):
        NGRPOSwitch(**kwargs)


def test_invalid_fraction():
    with pytest.raises(ValueError):
        NGRPOSwitch().update(0, 1.5)
