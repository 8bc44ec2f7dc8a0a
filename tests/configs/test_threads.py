"""`num_threads: auto`: each role's threads follow from the pipeline, so a pipeline that overlaps the roles
does not put four spinning threads on two cores."""

from __future__ import annotations

import pytest

from configs.loader import ConfigError, load_config

PIPELINES = {"sync": ["train.pipeline=sync"], "one_step_off": ["train.pipeline=one_step_off"],
             "stream": ["train.pipeline=stream", "train.pipeline.max_staleness=2"]}


@pytest.mark.parametrize("preset", ["tiny-cpu", "tiny-cpu-agent"])
def test_the_cpu_presets_give_both_cores_to_a_role_only_when_the_roles_take_turns(preset):
    threads = {p: (c.threads("rollout"), c.threads("learner"), c.threads("learner", alone=True))
               for p, c in ((p, load_config(preset, s)) for p, s in PIPELINES.items())}
    assert threads == {"sync": (2, 2, 2), "one_step_off": (1, 1, 2), "stream": (1, 1, 2)}


def test_auto_shares_what_both_roles_reserve_among_the_role_s_actors():
    cfg = load_config("tiny-cpu", ["rollout.num_workers=2", "rollout.num_cpus=2", "learner.num_cpus=2",
                                   "cluster.local_num_cpus=6"])
    assert (cfg.threads("rollout"), cfg.threads("learner")) == (3, 6)
    cfg = load_config("tiny-cpu", ["rollout.num_workers=2", "rollout.num_cpus=2", "learner.num_cpus=2",
                                   "cluster.local_num_cpus=6", "train.pipeline=one_step_off"])
    assert (cfg.threads("rollout"), cfg.threads("learner")) == (2, 2)
    # A fraction of a CPU still gets a thread.
    half = load_config("tiny-cpu", ["rollout.num_cpus=0.5", "train.pipeline=one_step_off"])
    assert half.threads("rollout") == 1


def test_a_number_or_none_is_kept_as_given_and_anything_else_refused():
    cfg = load_config("tiny-cpu", ["rollout.num_threads=3", "learner.num_threads=null",
                                   "train.pipeline=one_step_off"])
    assert (cfg.threads("rollout"), cfg.threads("learner")) == (3, None)
    for bad in ("0", "many", "2.5"):
        with pytest.raises(ConfigError, match="rollout.num_threads"):
            load_config("tiny-cpu", [f"rollout.num_threads={bad}"])
