"""A role that cannot start reaches the user as one line — role, node, the root cause's own message —
and exit status 1, on a real local Ray (issue 24, item 3).

The rollout worker is asked for a KV cache far larger than any machine's memory: on a Ray the run did
not start (here the session's local one) the size a worker node can hold is not known before it
starts, so preflight lets it through, and vLLM refuses it in the worker's constructor. The learner
starts first (DeepSpeed), so this takes about 30 s on 2 cores once the tiny model and DeepSpeed's ops
are cached.
"""

from __future__ import annotations

import re
import signal

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.vllm, pytest.mark.deepspeed]

SETTINGS = [
    "train.warmup.enabled=false", "train.steps=1", "train.eval_before=false", "train.eval_after=false",
    "train.progress=false", "task.options.n_single=200", "task.options.n_multistep_samples=100",
    "rollout.kv_cache_memory_bytes=1125899906842624",  # 1 PiB
]


def test_a_rollout_worker_that_cannot_start_is_one_line(tmp_path, capfd, ray_local):
    import train

    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}  # train.py sets its own
    try:
        code = train.main([f"--set=train.run_dir={tmp_path}", *(f"--set={s}" for s in SETTINGS)])
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
    err = capfd.readouterr().err
    assert code == 1, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    # The role and its node, then vLLM's own message (not Ray's "actor died" wrapper).
    assert re.fullmatch(r"error: rollout-0 on node \S+: ValueError: .*requested memory for kv.*",
                        lines[0]), err
    assert "Traceback" not in err and "UnserializableException" not in err
