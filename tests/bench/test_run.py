"""bench.run's table: each ratio is the right way round, and a target is judged by it."""

from __future__ import annotations

from bench.run import agent_table, gateway_table, markdown, rows


class _Units:
    def __init__(self, units):
        self.units = units

    def median(self, key="seconds"):
        import statistics

        return statistics.median(u[key] for u in self.units)


def test_ratios_and_targets():
    m = {
        "gen-ours": _Units([{"seconds": 1.0, "tokens": 1000}]),
        "gen-bare": _Units([{"seconds": 0.9, "tokens": 1000}]),
        "gen-bare-lp": _Units([{"seconds": 1.2, "tokens": 1000}]),
        "rl-sync": _Units([{"seconds": 3.0, "sync": 0.03, "generate": 1.0, "learn": 2.0}]),
        "rl-off": _Units([{"seconds": 2.2, "sync": 0.03, "generate": 2.0, "learn": 2.1}]),
        "rl-sync-1x1": _Units([{"seconds": 4.0, "sync": 0.03, "generate": 1.5, "learn": 2.0}]),
        "trl": _Units([{"seconds": 6.0}]),
        "learner-ds": _Units([{"seconds": 2.1}]), "learner-torch": _Units([{"seconds": 2.0}]),
        # pipelined steps alternate long and short: the agent rows take the rate over all units
        "agent-sync": _Units([{"seconds": 10.0, "samples": 64, "occupancy": 0.4}] * 2),
        "agent-off": _Units([{"seconds": 9.0, "samples": 64, "occupancy": 0.3}] * 2),
        "agent-stream": _Units([{"seconds": 2.0, "samples": 64, "occupancy": 0.9, "learn": 1.5},
                                {"seconds": 10.0, "samples": 64, "occupancy": 1.0, "learn": 9.5}]),
        # the gateway: 64 episodes in 8 s (4 of them in the engine), without lock step in 7 s, in the worker
        # in 6 s (4.5 in the engine); 192 calls a unit each
        "gw-harness": _Units([{"seconds": 8.0, "samples": 64, "calls": 192, "tokens": 3200, "success": 32,
                               "engine": 4.0, "rest": 4.0}] * 2),
        "gw-free": _Units([{"seconds": 7.0, "samples": 64, "calls": 192, "tokens": 3200, "success": 32,
                            "engine": 4.0, "rest": 3.0}] * 2),
        "gw-worker": _Units([{"seconds": 6.0, "samples": 64, "calls": 192, "tokens": 3200, "success": 32,
                              "engine": 4.5, "rest": 1.5}] * 2),
    }
    table = {r["measure"]: r for r in rows(m)}
    gen = table["generation vs bare vLLM (text only)"]
    assert abs(gen["ratio"] - 0.9) < 1e-9 and gen["met"] == "no"  # 1000/1.0 vs 1000/0.9 tokens/s
    assert table["LoRA push / synchronous RL step"]["met"] == "yes"  # 0.01
    assert table["RL step: synchronous vs TRL GRPOTrainer (HF generate)"]["ratio"] == 2.0
    assert table["RL step: one-step-off vs TRL GRPOTrainer (HF generate)"]["met"] == "yes"  # 6 / 2.2
    over = table["overlapped step / max(generate, learn) alone, 1+1 threads"]
    assert abs(over["ratio"] - 1.1) < 1e-9 and over["met"] == "yes"
    stream = table["agent RL step: stream vs synchronous"]
    assert stream["ngrpo_ray"] == 6.0 and abs(stream["ratio"] - 10 / 6) < 1e-9 and stream["met"] == "yes"
    assert table["agent RL step: one-step-off vs synchronous"]["met"] == ""  # reported, no target
    assert abs(table["agent engine occupancy: stream vs synchronous"]["ratio"] - 0.95 / 0.4) < 1e-9
    hidden = table["agent stream step / its learner's update"]  # 6 s a step, 5.5 s of it the update
    assert hidden["baseline"] == 5.5 and abs(hidden["ratio"] - 6 / 5.5) < 1e-9
    bound = table["agent stream vs synchronous, bound: sync step / that update"]
    assert abs(bound["ratio"] - 10 / 5.5) < 1e-9 and bound["met"] == ""  # above the first row's 10 / 6
    text = markdown(list(table.values()), {"date": "d", "machine": "m", "rounds": 1})
    assert text.count("\n| ") == len(table) + 1  # header + one line per row
    agents = agent_table(m).splitlines()
    assert agents[2:] == ["| sync | 0.1 | 6.4 | 0.4 | 2 |", "| one_step_off | 0.111 | 7.11 | 0.3 | 2 |",
                          "| stream | 0.167 | 10.7 | 0.95 | 2 |"]

    gw = table["agent episodes through the OpenAI gateway vs in the worker"]
    assert gw["ngrpo_ray"] == 8.0 and abs(gw["ratio"] - 0.75) < 1e-9 and gw["met"] == "no"  # 8/8 vs 64/6
    free = table["the same without lock step and per-request seeds vs in the worker"]
    assert abs(free["ratio"] - 6 / 7) < 1e-9
    per_call = table["per call outside the engine: gateway vs in the worker"]
    assert abs(per_call["ngrpo_ray"] - 1000 * 4 / 192) < 1e-9 and abs(per_call["ratio"] - 4 / 1.5) < 1e-9
    assert gateway_table(m).splitlines()[2:] == [
        "| through the gateway (as a run) | 8 | 24 | 400 | 0.50 | 0.50 | 2 |",
        "| through the gateway, no lock step | 9.14 | 27.4 | 457 | 0.50 | 0.57 | 2 |",
        "| in the worker | 10.7 | 32 | 533 | 0.50 | 0.75 | 2 |"]
