"""The coordinator's loop with in-process roles (no Ray, no vLLM): each feature asserted by its effect.

Real learner (DeepSpeed ZeRO-2 over PEFT, in this process), real reward actors, the real task; only
the rollout worker is scripted (tests/actors/scripted_worker.py), so that a test can choose the answers
that drive the dynamic NGRPO switch on and off, make one kind of request always wrong, or make the
difficulty filter drop a category.
"""

from __future__ import annotations

import json
import logging

import pytest

from actors.driver.coordinator import Coordinator
from cluster.backend import LocalBackend
from configs.loader import load_config
from learner.learner import Learner
from observe.schema import METRICS, lookup, reproducible
from tasks.base import load_task
from tests.actors.scripted_worker import scripted_worker

pytestmark = pytest.mark.deepspeed

SMALL = [
    "task.options.n_single=40", "task.options.n_multistep_samples=20", "rollout.n=4", "rollout.max_tokens=96",
    "train.prompts_per_step=4", "train.eval_limit=4", "learner.lr=0.02", "learner.micro_batch_size=16",
    "train.warmup.enabled=false", "train.progress=false",
]


class RecordingLearner(Learner):
    """The real learner, keeping the batches it was given (to look at their token weights)."""

    batches: list = []

    def train_step(self, batch):
        RecordingLearner.batches.append(batch)
        return super().train_step(batch)


def _answers(row: dict) -> dict[str, str]:
    sol = json.loads(row["solution"])
    tool = sol["action"]["tool"]
    wrong = "check_market_status" if tool != "check_market_status" else "check_balance"
    return {
        "right": row["solution"],
        "wrong": json.dumps({**sol, "action": {"tool": wrong, "params": {}}}, ensure_ascii=False),
        "no_thought": json.dumps({**sol, "thought": ""}, ensure_ascii=False),
        "junk": "not json",
    }


def _run(tmp_path, overrides: list[str], script, steps: int, learner=Learner,
         take: int | None = None) -> tuple[Coordinator, list[dict]]:
    """A run of `steps` steps, of which the first `take` (all by default) are taken."""
    cfg = load_config("tiny-cpu", [*SMALL, f"train.steps={steps}", *overrides])
    train, held = load_task(cfg.task).rows()  # the scripted worker answers for these rows
    roles = {"rollout": scripted_worker(train + held, script), "learner": learner}
    coord = Coordinator(cfg, str(tmp_path / "run"), backend=LocalBackend(), roles=roles)
    try:
        coord.setup()
        coord.evaluate("before")
        rows = [coord.train_step() for _ in range(steps if take is None else take)]
        coord.evaluate("after")
        coord.finish()
    finally:
        coord.shutdown()
    return coord, rows


def _script_dynamic(row: dict, n: int, stage) -> list[str]:
    """Steps 1-3: every group all the same imperfect answer (zero spread); then spread. Multistep rows
    are never right."""
    a = _answers(row)
    hard = row["category"] == "multistep"
    if stage == "eval":
        return [a["right"]]
    if stage <= 3:
        return [a["wrong" if hard else "no_thought"]] * n
    pair = ("wrong", "junk") if hard else ("right", "wrong")
    return [a[pair[i % 2]] for i in range(n)]


@pytest.fixture(scope="module")
def dynamic(tmp_path_factory):
    RecordingLearner.batches = []
    overrides = [
        "algorithm.ngrpo.mode=dynamic", "algorithm.ngrpo.window=2", "algorithm.ngrpo.on_above=0.3",
        "algorithm.ngrpo.off_below=0.2", "algorithm.loss.dart=true", "algorithm.loss.kl_coef=0.05",
        "train.checkpoint_every=3", "train.sampling=adaptive", "train.adaptive_by=kind",
        "train.warmup.enabled=true", "train.warmup.steps=3", "train.warmup.batch_size=4",
    ]
    tmp = tmp_path_factory.mktemp("dynamic")
    coord, rows = _run(tmp, overrides, _script_dynamic, 6, learner=RecordingLearner)
    return coord, rows, list(RecordingLearner.batches)


def test_the_switch_goes_on_and_off_and_ngrpo_acts_on_zero_spread_groups(dynamic):
    coord, rows, _ = dynamic
    assert [r["ngrpo_active"] for r in rows] == [True, True, True, True, False, False]
    assert [(e.step, e.active) for e in coord.switch.events] == [(1, True), (5, False)]
    logged = [json.loads(x) for x in (coord.run.dir / "events.jsonl").read_text().splitlines()]
    assert ([(e["step"], e["active"]) for e in logged if e["event"] == "ngrpo_switch"]
            == [(1, True), (5, False)])
    for r in rows[:3]:  # every group zero-std and imperfect: only NGRPO's virtual sample gives signal
        assert r["frac_reward_zero_std"] == 1.0 and r["frac_zero_std_other"] == 1.0
        assert r["advantage_abs_mean"] > 0 and r["learned_sequences"] == 16.0
    assert all(r["frac_reward_zero_std"] == 0.0 for r in rows[3:])


def test_dart_weights_follow_the_thought_and_action_spans(dynamic):
    coord, _, batches = dynamic
    assert len(batches) == 6 and all(b.token_weights is not None for b in batches)
    seen = set()
    for batch in (batches[0], batches[3]):
        for ids, w in zip(batch.completion_ids, batch.token_weights):
            assert len(w) == len(ids)
            text = coord.tokenizer.decode(ids, skip_special_tokens=True)
            if text == "not json":
                assert set(w) == {1.0}
                continue
            thought = json.loads(text)["thought"]
            assert (0.3 in w) == bool(thought) and 0.7 in w  # thought tokens 0.3, action tokens 0.7
            seen.add(bool(thought))
    assert seen == {True, False}  # both an empty and a written thought were looked at


def test_checkpoints_every_k_steps_hold_the_adapter_and_the_state(dynamic):
    coord, _, _ = dynamic
    for step in (0, 3, 6):
        ckpt = coord.run.dir / "checkpoints" / f"step_{step:05d}"
        assert (ckpt / "COMPLETE").exists() and (ckpt / "adapter" / "adapter_model.safetensors").exists()
        assert list((ckpt / "learner" / "state").glob("*optim_states.pt"))  # the optimizer state too
        state = json.loads((ckpt / "coordinator.json").read_text())
        assert state["step"] == step and state["policy_version"] == step
    assert not (coord.run.dir / "checkpoints" / "step_00002").exists()
    assert (coord.run.dir / "checkpoints" / "latest").read_text().strip() == "step_00006"


def test_adaptive_sampling_weighs_the_kinds_that_stay_wrong(dynamic):
    coord, rows, _ = dynamic
    weights = {k.split("/", 1)[1]: v for k, v in rows[-1].items() if k.startswith("sampling_weight/")}
    kinds = {r["kind"]: r["category"] for r in coord.train_rows}
    assert set(weights) == set(kinds)
    start = coord.cfg.train.adaptive_floor + 0.5  # a kind never drawn keeps its initial weight
    hard = [w for k, w in weights.items() if kinds[k] == "multistep" and w != start]
    easy = [w for k, w in weights.items() if kinds[k] != "multistep" and w != start]
    assert hard and easy and min(hard) > max(easy)


def test_the_warm_up_model_is_what_the_roles_start_from(dynamic):
    coord, _, _ = dynamic
    assert coord.info["warmup_steps"] == 3
    assert coord.base_model_dir == str(coord.run.dir / "warmup_model")
    assert (coord.run.dir / "warmup_model" / "model.safetensors").exists()


def test_rows_follow_the_schema_and_evals_are_written(dynamic):
    coord, rows, _ = dynamic
    for r in rows:
        for key in r:
            lookup(key)  # raises for a key the schema does not declare
        assert r["kl_ref"] >= 0 and r["ratio_mean"] == 1.0  # one update per batch: on-policy
    ev = json.loads((coord.run.dir / "eval.json").read_text())
    assert ev["before"]["tool_accuracy"] == 1.0 and ev["after"]["policy_version"] == 6


def _script_filter(row: dict, n: int, stage) -> list[str]:
    """The filter sees balance always right and transfer always wrong; RL steps see spread."""
    a = _answers(row)
    if stage == "eval":
        return [a["right"]]
    if stage == "difficulty" and row["category"] in ("balance", "transfer"):
        return [a["right" if row["category"] == "balance" else "wrong"]] * n
    return [a[("right", "wrong")[i % 2]] for i in range(n)]


@pytest.fixture(scope="module")
def filtered(tmp_path_factory):
    overrides = ["algorithm.difficulty.enabled=true", "algorithm.difficulty.num_samples=4",
                 "learner.updates_per_batch=2", "algorithm.ngrpo.mode=off",
                 "cluster.env_vars={API_TOKEN: s3cr3t}"]
    return _run(tmp_path_factory.mktemp("filtered"), overrides, _script_filter, 3)


def test_the_difficulty_filter_drops_all_right_and_all_wrong_prompts(filtered):
    coord, _ = filtered
    cats = {r["category"] for r in coord.train_rows}
    assert "balance" not in cats and "transfer" not in cats and len(cats) >= 5
    assert coord.info["difficulty_kept"] == len(coord.train_rows) < coord.info["difficulty_from"]


def test_env_var_values_never_reach_the_run_directory(filtered):
    coord, _ = filtered
    saved = json.loads((coord.run.dir / "config.json").read_text())
    assert saved["cluster"]["env_vars"] == {"API_TOKEN": "<redacted>"}
    for f in coord.run.dir.rglob("*"):
        if f.is_file() and f.suffix in (".json", ".jsonl", ".md"):
            assert "s3cr3t" not in f.read_text(errors="replace"), f


def test_a_second_pass_over_the_batch_is_off_policy(filtered):
    _, rows = filtered
    # Pass 1 starts from the sampling weights (ratio 1); pass 2 from the moved ones.
    assert all(abs(r["ratio_mean"] - 1.0) > 1e-6 for r in rows)
    assert all(not r["ngrpo_active"] for r in rows)


STREAM = [*SMALL, "train.steps=4", "train.pipeline=stream", "train.pipeline.max_staleness=2",
          "rollout.max_tokens=32", "train.pipeline.max_in_flight=6", "train.checkpoint_every=2",
          "train.eval_before=false"]


def _streamed_coordinator(run_dir) -> Coordinator:
    """train.pipeline stream with the real vLLM worker and learner as Ray actors (a vLLM engine in this
    process would tear down the torch.distributed groups the in-process learners of the other tests use)."""
    return Coordinator(load_config("tiny-cpu", STREAM), str(run_dir))


@pytest.fixture(scope="module")
def streamed(tmp_path_factory, ray_local):
    coord = _streamed_coordinator(tmp_path_factory.mktemp("streamed") / "run")
    try:
        coord.setup()
        rows = [coord.train_step() for _ in range(coord.cfg.train.steps)]
        coord.evaluate("after")
    finally:
        coord.shutdown()
    return coord, rows


def test_a_stream_in_one_process_keeps_its_bound(streamed):
    """Each step pushed, the lag reaches k = 2 and never passes it, nothing was stale."""
    _, rows = streamed
    assert [r["policy_version"] for r in rows] == [1, 2, 3, 4]
    assert [r["version_lag_max"] for r in rows] == [0, 1, 2, 2]
    assert all(r["stale_dropped"] == 0 and 0.0 < r["engine_occupancy"] <= 1.0 for r in rows)


def test_a_resumed_stream_continues_exactly(streamed):
    """Resumed from the checkpoint of step 2 (taken at each worker's cut: the groups it had finished, none
    half done), steps 3 and 4 give the straight run's rows value for value, the groups the checkpoint
    held finished are not sampled again."""
    first, straight = streamed
    state = json.loads((first.run.dir / "checkpoints" / "step_00002" / "coordinator.json").read_text())
    held = state["pipeline"]["got"]
    assert held and set(held) <= {"3", "4"}  # sampled ahead of the checkpoint, kept in it
    coord = _streamed_coordinator(first.run.dir)
    try:
        coord.setup(resume=str(first.run.dir / "checkpoints" / "step_00002"))
        resumed = [coord.train_step() for _ in range(2)]
    finally:
        coord.shutdown()
    for a, b in zip(straight[2:], resumed, strict=True):
        assert reproducible(a) == reproducible(b)


def test_every_schema_key_is_emitted_by_some_run(dynamic, filtered, bad_numbers, agent, streamed):
    emitted = {k for r in dynamic[1] + filtered[1] + bad_numbers[1] + agent[1] + streamed[1] for k in r}
    # a harness run's own keys: its rows (with the real worker's gateway) are checked in test_harness_run.py
    emitted |= {"calls_per_episode", "frac_split", "harness_failures"}
    declared = {m.key for m in METRICS}
    unused = {k for k in declared if not any(lookup(e).key == k for e in emitted)}
    assert not unused, f"the schema declares keys no run emits: {sorted(unused)}"


def flaky(prompts, completions, **columns):
    """A user reward with bugs: NaN on junk, an exception on "boom", 5.0 (outside its declared range)
    on "huge"; 0.5 otherwise."""
    out = []
    for c in completions:
        if "boom" in c:
            raise RuntimeError("reward bug\n" + "a long traceback-like text " * 100)  # flood
        out.append(float("nan") if c == "not json" else 5.0 if "huge" in c else 0.5)
    return out


flaky.reward_range = (0.0, 1.0)


def _script_bad(row: dict, n: int, stage) -> list[str]:
    """Step 1: per group two good answers and three whose reward fails; step 2: every group has one
    valid sample only."""
    a = _answers(row)
    sol = json.loads(row["solution"])
    boom = json.dumps({**sol, "thought": "boom"}, ensure_ascii=False)
    huge = json.dumps({**sol, "thought": "huge"}, ensure_ascii=False)
    if stage == "eval":
        return [a["right"]]
    if stage == 1:
        return [a["right"], a["wrong"], a["junk"], boom, huge][:n]
    return [a["junk"], boom, huge, a["junk"], a["right"]][:n]


@pytest.fixture(scope="module")
def bad_numbers(tmp_path_factory):
    RecordingLearner.batches = []
    overrides = ["rollout.n=5", "reward.functions=[{name: gt, weight: 1.0}, "
                 "{name: 'tests.actors.test_coordinator:flaky', weight: 0.5}]", "algorithm.ngrpo.mode=off"]
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append
    watched = [logging.getLogger(n) for n in ("actors.driver.coordinator", "actors.reward.pool")]
    for lg in watched:
        lg.addHandler(handler)
    try:
        coord, rows = _run(tmp_path_factory.mktemp("bad"), overrides, _script_bad, 2,
                           learner=RecordingLearner)
    finally:
        for lg in watched:
            lg.removeHandler(handler)
    return coord, rows, list(RecordingLearner.batches), records


def test_failed_rewards_are_counted_and_left_out_of_groups_and_loss(bad_numbers):
    coord, rows, batches, _ = bad_numbers
    first, second = rows
    assert first["reward_failures"] == 3 * 4 and first["dropped_groups"] == 0
    assert len(batches[0].completion_ids) == 2 * 4  # only the valid samples reach the learner
    assert first["policy_version"] == 1
    # Step 2: one valid sample per group: no comparison, every group dropped, nothing learned or pushed.
    assert second["reward_failures"] == 4 * 4 and second["dropped_groups"] == 4
    assert len(batches) == 1 and second["policy_version"] == 1 and "loss" not in second
    logged = [json.loads(x) for x in (coord.run.dir / "events.jsonl").read_text().splitlines()]
    causes = " ".join(e["detail"] for e in logged if e["event"] == "reward_failure")
    assert "NaN" in causes and "RuntimeError: reward bug" in causes and "declared range" in causes


def test_reward_failures_are_one_log_line_a_step_and_one_event_each(bad_numbers):
    coord, rows, _, records = bad_numbers
    warned = [r.getMessage() for r in records if "reward failure" in r.getMessage()]
    assert len(warned) == len(rows) == 2  # one summary a step, not one line per failed completion
    assert not [r for r in records if r.name == "actors.reward.pool"]  # the reward actors log none
    assert (warned[0].startswith("step 1: 12 reward failure(s), first: ")
            and warned[1].startswith("step 2: 16 "))
    assert all("\n" not in w and len(w) < 500 for w in warned)
    logged = [json.loads(x) for x in (coord.run.dir / "events.jsonl").read_text().splitlines()]
    details = [e["detail"] for e in logged if e["event"] == "reward_failure"]
    assert len(details) == sum(r["reward_failures"] for r in rows)  # every completion still on record
    assert all("\n" not in d and len(d) < 400 for d in details)


def _script_spread(row: dict, n: int, stage) -> list[str]:
    a = _answers(row)
    return [a["right"]] if stage == "eval" else [a[("right", "wrong", "junk")[i % 3]] for i in range(n)]


def test_a_resumed_run_writes_the_rows_the_straight_run_wrote(tmp_path):
    over = ["train.checkpoint_every=2", "algorithm.ngrpo.mode=dynamic", "train.sampling=adaptive",
            "train.adaptive_by=kind"]
    _, straight = _run(tmp_path / "a", over, _script_spread, 4)
    first, _ = _run(tmp_path / "b", over, _script_spread, 4, take=3)  # stops with a checkpoint at step 3
    cfg = load_config("tiny-cpu", [*SMALL, "train.steps=4", *over])
    train, held = load_task(cfg.task).rows()
    coord = Coordinator(cfg, str(first.run.dir), backend=LocalBackend(),
                        roles={"rollout": scripted_worker(train + held, _script_spread)})
    try:
        crashed = first.run.dir / "checkpoints" / ".tmp-step_00004-99"  # a crash mid-checkpoint left it
        crashed.mkdir()
        info = coord.setup(resume=str(first.run.dir / "checkpoints" / "step_00002"))  # not the newest
        assert not crashed.exists()
        assert info["step"] == 2 and coord.version == 2
        resumed = [coord.train_step() for _ in range(2)]
    finally:
        coord.shutdown()
    lines = (first.run.dir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in lines] == [1, 2, 3, 4]  # step 3 once: the later rows were dropped
    for a, b in zip(straight[2:], resumed):
        assert reproducible(a) == reproducible(b)


@pytest.mark.parametrize("staleness", [0, 1])
def test_the_state_a_stop_inside_a_step_saves_is_the_state_before_that_step(tmp_path, staleness):
    """A run stopped inside a step (restarts exhausted) checkpoints the state it had before the step:
    it must be that state as the step began, not as the step's own draw (prompt queues) or the pipeline
    left it. It equals the regular checkpoint written at the end of the step before."""
    over = ["train.checkpoint_every=2", "algorithm.ngrpo.mode=dynamic", "train.sampling=adaptive",
            "train.adaptive_by=kind", f"train.pipeline={('sync', 'one_step_off')[staleness]}"]
    coord, _ = _run(tmp_path, over, _script_spread, 4, take=3)
    saved = json.loads((coord.run.dir / "checkpoints" / "step_00002" / "coordinator.json").read_text())
    assert json.loads(json.dumps(coord._before_step)) == saved
