"""RunLog's TensorBoard copy: numeric metrics per step and eval tables, read back by TensorBoard."""

from __future__ import annotations

import json
import math

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from observe.run_log import RunLog
from observe.tensorboard import TensorBoardLog, eval_scalars, row_scalars


def read_scalars(log_dir) -> dict[str, list[tuple[int, float]]]:
    acc = EventAccumulator(str(log_dir))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_run_log_writes_each_numeric_metric_at_its_step(tmp_path):
    log = RunLog(tmp_path)
    for step in (1, 2, 3):
        log.metrics({"step": step, "reward_mean": 0.1 * step, "ngrpo_active": step == 2, "time/learn": 2.0,
                     "accuracy/combo": 0.5, "weights_fingerprint": "4acd", "kl_ref": None,
                     "loss": float("nan")})
    log.close()

    assert list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))
    scalars = read_scalars(tmp_path / "tensorboard")
    assert set(scalars) == {"reward_mean", "ngrpo_active", "time/learn", "accuracy/combo"}
    assert [s for s, _ in scalars["reward_mean"]] == [1, 2, 3]
    assert [v for _, v in scalars["reward_mean"]] == pytest.approx([0.1, 0.2, 0.3])
    assert scalars["ngrpo_active"] == [(1, 0.0), (2, 1.0), (3, 0.0)]
    # metrics.jsonl is still the full record, NaN as null
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and rows[0]["weights_fingerprint"] == "4acd" and rows[0]["loss"] is None


def test_eval_tables_land_at_their_policy_version(tmp_path, run_dir):
    evals = json.loads((run_dir / "eval.json").read_text())
    log = RunLog(tmp_path)
    log.eval("before", evals["before"])
    log.eval("after", evals["after"])
    log.eval("mid", {"accuracy": 0.45}, step=6)  # a generic task's table: its own keys
    log.close()

    scalars = read_scalars(tmp_path / "tensorboard")
    assert scalars["eval/before/tool_accuracy"] == [(0, pytest.approx(0.40))]
    assert scalars["eval/after/tool_accuracy"] == [(12, pytest.approx(0.52))]
    assert scalars["eval/after/average_score"] == [(12, pytest.approx(0.65))]
    assert scalars["eval/after/per_category/combo"] == [(12, 0.75)]
    assert scalars["eval/mid/accuracy"] == [(6, pytest.approx(0.45))]


def test_run_log_without_tensorboard_writes_no_event_files(tmp_path):
    log = RunLog(tmp_path, tensorboard=False)
    log.metrics({"step": 1, "reward_mean": 0.5})
    log.eval("after", {"accuracy": 0.5})
    log.close()
    assert not (tmp_path / "tensorboard").exists()
    assert (tmp_path / "metrics.jsonl").read_text().count("\n") == 1


def test_a_second_run_log_in_the_same_dir_adds_steps(tmp_path):
    """A restarted run opens a new event file; TensorBoard reads both as one run."""
    for steps in ((1, 2), (3, 4)):
        log = RunLog(tmp_path)
        for s in steps:
            log.metrics({"step": s, "reward_mean": float(s)})
        log.close()
    assert len(list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))) == 2
    # TensorBoard reads event files in name order; two opened within one second by one process differ
    # only by a per-process counter (written unpadded: 10 sorts before 9), so compare the steps as a set.
    assert sorted(s for s, _ in read_scalars(tmp_path / "tensorboard")["reward_mean"]) == [1, 2, 3, 4]


def test_rows_without_a_step_and_double_close_are_harmless(tmp_path):
    tb = TensorBoardLog(tmp_path / "tb")
    tb.metrics({"reward_mean": 0.5})  # not a step: skipped rather than put at step 0
    tb.metrics({"step": 7, "reward_mean": 0.25})
    tb.close()
    tb.close()
    assert read_scalars(tmp_path / "tb")["reward_mean"] == [(7, 0.25)]


def test_scalar_selection():
    row = {"step": 1, "a": 1, "b": False, "c": "x", "d": None, "e": math.inf}
    assert row_scalars(row) == {"a": 1.0, "b": 0.0}
    assert eval_scalars("before", {"per_category": {"x": None, "y": 1}, "seconds": 2.5}) == {
        "eval/before/seconds": 2.5, "eval/before/per_category/y": 1.0}


def test_a_sample_of_completions_is_a_text_summary_and_a_jsonl_line_each(tmp_path):
    log = RunLog(tmp_path)
    prompt = [{"role": "user", "content": "2+2?"}]
    sample = [{"group": "g", "prompt": prompt, "completion": "<answer>4</answer>",
               "reward": 1.0, "scores": {"answer_format": 1.0}}]
    log.completions(5, sample)
    log.completions(10, [{**sample[0], "completion": "four", "reward": 0.0}])
    log.close()
    acc = EventAccumulator(str(tmp_path / "tensorboard"))
    acc.Reload()
    texts = {e.step: e.tensor_proto.string_val[0].decode() for e in acc.Tensors("completions")}
    assert set(texts) == {5, 10} and "<answer>4</answer>" in texts[5] and "| four |" in texts[10]
    lines = [json.loads(x) for x in (tmp_path / "completions_train.jsonl").read_text().splitlines()]
    assert [(x["step"], x["completion"]) for x in lines] == [(5, "<answer>4</answer>"), (10, "four")]
    # a run that goes back to step 5 writes step 10 again: the later line goes, never twice
    log = RunLog(tmp_path)
    log.truncate_metrics(5)
    log.close()
    assert len((tmp_path / "completions_train.jsonl").read_text().splitlines()) == 1
