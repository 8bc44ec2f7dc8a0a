"""bench.real's table: each real-model ratio the right way round, the optional rows only when measured,
and the scaling fit through its points."""

from __future__ import annotations

from bench.real import fit_per_token, rows, scaling
from tests.bench.test_run import _Units


def _learner(seconds: float, flops: float, peak: float, real: int, padded: int) -> _Units:
    return _Units([{"seconds": seconds, "flops": flops, "peak_flops": peak, "real_tokens": real,
                    "padded_tokens": padded, "learned": 64}])


def _measured(**extra) -> dict:
    return {
        "gen-ours": _Units([{"seconds": 10.0, "tokens": 1000}]),
        "gen-bare": _Units([{"seconds": 10.5, "tokens": 1000}]),
        "learner-ds": _learner(60.0, 60 * 4e10, 1e11, 960, 1000),  # 0.4 of the peak, 4% padding
        "learner-shared": _learner(40.0, 40 * 2e10, 1e11, 750, 1000),
        "rl-sync": _Units([{"seconds": 80.0, "sync": 1.2, "memory/learner": 3.7, "memory/rollout": 2.6}]),
        "trl": _Units([{"seconds": 200.0}]),
        **extra,
    }


def test_quick_rows_leave_out_what_was_not_measured():
    table = {r["measure"]: r for r in rows(_measured())}
    assert abs(table["generation vs bare vLLM (text only)"]["ratio"] - 1.05) < 1e-9
    whole = table["learner FLOP/s / fp32 matmul peak (whole sequences; 4% of its tokens padding)"]
    assert abs(whole["ratio"] - 0.4) < 1e-9 and whole["met"] == "yes"
    shared = table["learner FLOP/s / fp32 matmul peak (share_prompt; 25% of its tokens padding)"]
    assert abs(shared["ratio"] - 0.2) < 1e-9 and shared["met"] == "no"
    assert table["RL step: synchronous vs TRL GRPOTrainer (HF generate)"]["ratio"] == 2.5
    assert table["LoRA push / synchronous RL step"]["met"] == "yes"  # 1.2 / 80 = 0.015
    memory = [r for k, r in table.items() if k.startswith("peak RSS")]
    assert len(memory) == 1 and abs(memory[0]["ngrpo_ray"] - 6.3) < 1e-9
    assert not any("one-step-off" in k or "gateway" in k for k in table)


def test_full_rows_add_one_step_off_and_the_gateway():
    gw = {"samples": 16, "calls": 16, "tokens": 1000, "success": 0, "engine": 10.0}
    m = _measured(**{
        "rl-off": _Units([{"seconds": 64.0, "learn": 60.0}]),  # its update on one thread
        "gw-harness": _Units([{**gw, "seconds": 12.0, "rest": 2.0}]),
        "gw-free": _Units([{**gw, "seconds": 11.0, "rest": 1.0}]),
        "gw-worker": _Units([{**gw, "seconds": 10.0, "rest": 0.5}]),
    })
    table = {r["measure"]: r for r in rows(m)}
    off = table["RL step: one-step-off vs synchronous"]
    assert abs(off["ratio"] - 1.25) < 1e-9 and off["met"] == "yes"
    assert abs(table["RL step: one-step-off vs TRL GRPOTrainer (HF generate)"]["ratio"] - 200 / 64) < 1e-9
    bound = table["one-step-off vs synchronous, bound: sync step / one-step-off's update (1 thread)"]
    assert bound["ngrpo_ray"] == 60.0 and abs(bound["ratio"] - 80 / 60) < 1e-9 and bound["met"] == ""
    gateway = table["agent episodes through the OpenAI gateway vs in the worker"]
    assert abs(gateway["ratio"] - 10 / 12) < 1e-9 and gateway["met"] == "yes"


def test_scaling_fits_seconds_per_token():
    slope, fixed = fit_per_token([(100, 2.0), (200, 3.0), (400, 5.0)])
    assert abs(slope - 0.01) < 1e-12 and abs(fixed - 1.0) < 1e-9
    m = {f"scale-c{c}": _Units([{"seconds": 1.0 + 0.01 * 50 * c, "real_tokens": 50 * c, "learned": c}])
         for c in (16, 64, 256)}
    text, data = scaling(m)
    slope = data["fits"]["completions"]["seconds_per_token"]
    assert abs(slope - 0.01) < 1e-12 and abs(data["fits"]["completions"]["fixed_seconds"] - 1.0) < 1e-9
    assert "length" not in data["fits"]  # no length points measured
    assert "| 256 completions | 256 | 12800 |" in text


def test_retable_writes_the_table_again_from_recorded_units(tmp_path, monkeypatch):
    import json

    from bench.real import main

    monkeypatch.setenv("NGRPO_BENCH_WORK", "real")  # main sets it too; restored after the test
    units = {k: s.units for k, s in _measured().items()}
    meta = {"date": "2026-12-08", "machine": "m", "rounds": 1, "seconds": 1, "quick": True}
    (tmp_path / "real-quick.json").write_text(json.dumps({"meta": meta, "units": units}))
    assert main(["--retable", "--quick", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "real-quick.md").read_text()
    assert text.startswith("Measured 2026-12-08 on m;") and "| RL step: synchronous vs TRL" in text
    assert json.loads((tmp_path / "real-quick.json").read_text())["rows"][0]["ratio"] == 1.05
