"""Every exception type of the project survives the pickling that carries it across a Ray boundary.

An exception raised in an actor reaches its caller pickled (by Ray's cloudpickle). A type that does
not rebuild from its pickle reaches the driver as Ray's `UnserializableException` and a traceback,
instead of its own message. Each type is built here with realistic arguments and round-tripped; a
guard test finds every exception class defined in the project, so a new one without a case fails.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
import traceback

import pytest
from ray import cloudpickle
from ray.exceptions import ActorDiedError, RayTaskError

from actors.driver.checkpoints import CheckpointError
from actors.driver.preflight import PreflightError
from actors.errors import PushError, RoleFailure, RunStopped, describe, root_cause
from actors.worker.agent_loop import TemplateDriftError
from actors.worker.gateway.render import Refused
from actors.worker.vllm_tap import TapError
from cluster.actor_group import PlacementTimeout, creation_error
from configs.loader import ConfigError
from models.packaged import ModelMissing
from observe.compare import CompareError
from rewards.contract import RewardContractError
from rewards.registry import RewardNotFoundError
from tasks.files import DataFileError
from tasks.fund_assistant.data import DataError

NODE = "c90a7502c24ce155aa82b674480d9884d8cba18f16a9242e11292a3a"
CASES = {
    RunStopped: lambda: RunStopped("run stopped at step 3: could not write metrics.jsonl: "
                                   "OSError: [Errno 28] No space left on device; "
                                   "the newest complete checkpoint is runs/x/step_000002"),
    PushError: lambda: PushError("worker 1 generated with version 2; "
                                 "the learner is at 4 and this pipeline trains at most 1 version(s) behind"),
    RoleFailure: lambda: RoleFailure("rollout", 1, NODE, "ValueError: Available memory on node 0 "
                                     "is less than requested memory for kv (1048576.0 GiB)"),
    PreflightError: lambda: PreflightError(["train.run_dir: cannot write the run directory /ro/x (Read-only)",
                                            "reward.functions[0].name: no module named 'mine'"]),
    TemplateDriftError: lambda: TemplateDriftError("the chat template's '<|im_end|>\\n' "
                                                   "decodes to '<|im_end|>'"),
    TapError: lambda: TapError("recorded 3 steps for 4 sampled tokens of request 0"),
    Refused: lambda: Refused("tool_choice 'required' or a named function forces a grammar on the sampler"),
    CheckpointError: lambda: CheckpointError("runs/x/checkpoints/step_000004: coordinator.json is missing"),
    DataError: lambda: DataError("data/train.jsonl:7: solution is not JSON (Expecting value)"),
    CompareError: lambda: CompareError("unknown metric 'reward_mena': not in any run's metrics.jsonl"),
    RewardNotFoundError: lambda: RewardNotFoundError("unknown reward 'gtt'; known: gt, multistep_gt, rule"),
    ConfigError: lambda: ConfigError("train.stepz: unknown key (did you mean steps?)"),
    DataFileError: lambda: DataFileError("data/train.jsonl: row 4 has no column 'answer' (columns: prompt)"),
    RewardContractError: lambda: RewardContractError("returned 3 values for 4 completions"),
    PlacementTimeout: lambda: PlacementTimeout("rollout: a lost node's bundles could not be placed again "
                                               "within 300s (cluster.node_wait_s; placement group "
                                               "RESCHEDULING)"),
    ModelMissing: lambda: ModelMissing("smollm2-135m-instruct is not installed: run `make real-model`"),
}
PACKAGES = ("configs", "cluster", "actors", "learner", "rewards", "tasks", "bench", "models", "observe",
            "algo", "contracts")
MODULES = ("train", "evaluate")


def _optional_cases() -> dict:
    """Types whose modules are new or optional: tested when they are there."""
    out = {}
    try:
        from actors.driver.run_lock import RunInUse

        out[RunInUse] = lambda: RunInUse("run x is in use by pid 4242 on host-a; wait for it or pick another")
    except ImportError:
        pass
    import train

    out[train.Interrupted] = lambda: train.Interrupted("SIGTERM")
    return out


CASES.update(_optional_cases())


def _same(a: BaseException, b: BaseException) -> None:
    assert type(b) is type(a)
    assert str(b) == str(a)
    assert b.args == a.args
    assert vars(b) == vars(a)


@pytest.mark.parametrize("cls", list(CASES), ids=lambda c: c.__name__)
def test_round_trips_through_pickle_and_cloudpickle(cls):
    error = CASES[cls]()
    assert type(error) is cls
    _same(error, pickle.loads(pickle.dumps(error)))
    _same(error, cloudpickle.loads(cloudpickle.dumps(error)))


@pytest.mark.parametrize("cls", list(CASES), ids=lambda c: c.__name__)
def test_survives_rays_wrapper(cls):
    """What Ray does with an actor's exception: a RayTaskError that is also an instance of the cause's
    class, pickled with cloudpickle, read back by the caller."""
    error = CASES[cls]()
    wrapped = _task_error(error, "ray::run-1/coordinator:Coordinator.setup", "10.0.0.1")
    back = cloudpickle.loads(cloudpickle.dumps(wrapped))
    assert isinstance(back, cls) and isinstance(back, RayTaskError)
    _same(error, back.cause)


def test_every_project_exception_type_has_a_case():
    found = set()
    for name in MODULES + tuple(m.name for p in PACKAGES for m in _walk(p)):
        module = importlib.import_module(name)
        found |= {c for _, c in inspect.getmembers(module, inspect.isclass)
                  if issubclass(c, BaseException) and c.__module__ == module.__name__}
    missing = sorted(c.__qualname__ for c in found - set(CASES))
    assert not missing, f"exception types without a pickling case here: {missing}"


def _walk(package: str):
    pkg = importlib.import_module(package)
    yield from pkgutil.walk_packages(pkg.__path__, prefix=f"{package}.")


# ---- what reaches the user: one line, the role, the node, the root cause ---------------------------
def _raised(error: BaseException) -> str:
    try:
        raise error
    except BaseException:  # noqa: BLE001 - formatted as Ray formats a task's exception
        return traceback.format_exc()


def _task_error(cause: BaseException, proctitle: str, ip: str) -> RayTaskError:
    return RayTaskError(proctitle.rsplit(".", 1)[-1], _raised(cause), cause, proctitle=proctitle, pid=4242,
                        ip=ip, actor_repr="X", actor_id="ab" * 8).as_instanceof_cause()


def test_a_constructor_error_is_named_by_its_own_message():
    message = ("Available memory on node 0 (8.89/11.21 GiB) is less than "
               "requested memory for kv (1048576.0 GiB).")
    died = ActorDiedError(RayTaskError(
        "__init__", _raised(ValueError(message + "\nDecrease --kv-cache-memory-bytes.")), ValueError(message),
        proctitle="ray::run-1/rollout-0:RolloutWorker.__init__", pid=4242, ip="10.0.0.2",
        actor_repr="RolloutWorker(0)", actor_id="ab" * 8))
    assert died.actor_init_failed
    assert creation_error(died) == f"ValueError: {message} Decrease --kv-cache-memory-bytes."
    assert root_cause(died) == creation_error(died)
    assert creation_error(RuntimeError("not Ray's")) is None
    # The coordinator turns it into a RoleFailure; the driver gets that back through Ray's wrapper.
    failure = RoleFailure("rollout", 0, NODE, creation_error(died))
    back = cloudpickle.loads(cloudpickle.dumps(
        _task_error(failure, "ray::run-1/coordinator:Coordinator.setup", "10.0.0.1")))
    line = describe(back, "coordinator")
    assert line == f"rollout-0 on node {NODE}: ValueError: {message} Decrease --kv-cache-memory-bytes."
    assert "\n" not in line


def test_a_call_that_raised_names_the_innermost_role():
    """A learner call that raised, handed on by the coordinator: the learner's role and node."""
    inner = _task_error(RuntimeError("DeepSpeed could not build its engine\nsecond line"),
                        "ray::run-1/learner-0:Learner.setup", "10.0.0.3")
    outer = cloudpickle.loads(cloudpickle.dumps(_task_error(inner, "ray::run-1/coordinator:Coordinator.setup",
                                                            "10.0.0.1")))
    line = describe(outer, "coordinator on node here")
    assert line == ("learner-0 on node 10.0.0.3: "
                    "RuntimeError: DeepSpeed could not build its engine second line")
    own = _task_error(PermissionError(13, "Permission denied"), "ray::run-1/coordinator:Coordinator.setup",
                      "10.0.0.1")
    assert describe(own, "x") == "coordinator on node 10.0.0.1: PermissionError: [Errno 13] Permission denied"
    assert describe(RunStopped("run stopped at step 2: disk full"), "x") == "run stopped at step 2: disk full"
