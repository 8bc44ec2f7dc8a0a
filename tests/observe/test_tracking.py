"""Experiment trackers for real: a local MLflow server and an sqlite store, W&B offline, read back with
their own clients and file formats; resume without duplicate steps; a failing tracker dropped."""

from __future__ import annotations

import doctest
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import observe.tracking as tracking
from configs.loader import load_config
from observe.report import write_report
from observe.run_log import RunLog
from observe.tensorboard import TensorBoardLog
from observe.tracking import Trackers, finish_runs, flat_params, note_tags, open_trackers, unavailable
from tests.observe.conftest import EVAL, metrics_row
from tests.observe.test_tensorboard import read_scalars

ROOT = Path(__file__).resolve().parents[2]
SECRET = "hf_not_for_trackers_1234"
STEPS = range(1, 13)
KEYS = ("reward_mean", "ngrpo_active", "accuracy/combo", "time/learn", "frac_reward_zero_std")


@pytest.fixture(scope="module", autouse=True)
def offline(tmp_path_factory):
    """No tracker may reach the network or log in: W&B offline, no telemetry, nothing of git or code."""
    env = {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_CONSOLE": "off",
           "WANDB_DIR": str(tmp_path_factory.mktemp("wandb")), "WANDB_DISABLE_GIT": "true",
           "WANDB_DISABLE_CODE": "true", "WANDB__DISABLE_STATS": "true", "WANDB__DISABLE_META": "true",
           "WANDB__DISABLE_MACHINE_INFO": "true", "WANDB_CACHE_DIR": str(tmp_path_factory.mktemp("wbcache")),
           "WANDB_DATA_DIR": str(tmp_path_factory.mktemp("wbdata")),
           "WANDB_CONFIG_DIR": str(tmp_path_factory.mktemp("wbconfig")),
           "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        mp.delenv("MLFLOW_TRACKING_URI", raising=False)
        yield env
        if "wandb" in sys.modules:
            sys.modules["wandb"].teardown()  # stops W&B's service process


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory, offline):
    """`mlflow server` on 127.0.0.1 with an sqlite store and a local artifact folder."""
    root = tmp_path_factory.mktemp("mlflow-server")
    port = _free_port()
    out = open(root / "server.log", "wb")
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "mlflow"), "server", "--backend-store-uri",
         f"sqlite:///{root}/mlflow.db",
         "--artifacts-destination", str(root / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1"], cwd=root, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, **offline})
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, (root / "server.log").read_text(errors="replace")[-3000:]
            try:
                with urllib.request.urlopen(f"{uri}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "mlflow server did not answer in 90 s"
            time.sleep(0.25)
        yield uri
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # its own session: the server and the workers it started
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        try:  # a worker still shutting down
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        out.close()


@pytest.fixture(scope="module")
def sqlite_uri(tmp_path_factory, offline):
    """One sqlite store for the module, its tables made here (that takes seconds)."""
    from mlflow import MlflowClient

    root = tmp_path_factory.mktemp("mlflow-sqlite")
    uri = f"sqlite:///{root}/mlflow.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)  # MLflow keeps the store and its artifact root (./mlruns, resolved now) per process
        MlflowClient(tracking_uri=uri).search_experiments()
    return uri


def _cfg(*sets: str):
    return load_config("tiny-cpu", [f"cluster.env_vars.HF_TOKEN={SECRET}", *sets])


def _open(cfg, run_dir: Path) -> RunLog:
    # The raw dump, secret included: the trackers must redact it themselves.
    return RunLog(run_dir, trackers=open_trackers(cfg.tracking, run_dir, cfg.model_dump(mode="json")))


# A training step's sample of completions (RunLog.completions, every other step here)
SAMPLE = [{"group": "combo", "prompt": [{"role": "user", "content": "buy 2 and check"}],
           "completion": '{"thought": "t"}', "reward": 0.5, "scores": {"gt": 0.5}}]


def _train(log: RunLog, steps, before: bool = True, after: bool = True) -> None:
    if before:
        log.eval("before", EVAL["before"])
    for s in steps:
        log.metrics(metrics_row(s))
        if s % 2 == 0:
            log.completions(s, SAMPLE)
    if after:
        log.eval("after", EVAL["after"])


def _outputs(run_dir: Path) -> None:
    """What the driver finds at the end: the report (PNGs, report.md) and the adapter."""
    (run_dir / "config.json").write_text(json.dumps({"train": {"steps": 12}}))
    (run_dir / "eval.json").write_text(json.dumps(EVAL))
    write_report(run_dir)
    (run_dir / "adapter").mkdir()
    (run_dir / "adapter" / "adapter_config.json").write_text('{"r": 8}')
    (run_dir / "adapter" / "adapter_model.safetensors").write_bytes(b"\0" * 64)


def _run_id(run_dir: Path, backend: str) -> str:
    return json.loads((run_dir / "tracking.json").read_text())["runs"][backend]["run_id"]


def _mlflow_run(uri: str, tmp_path: Path, cfg_sets=()) -> tuple[Path, str]:
    run_dir = tmp_path / "run-a"
    cfg = _cfg("tracking.backends=[tensorboard, mlflow]", f"tracking.mlflow_uri={uri}", *cfg_sets)
    note_tags(cfg.tracking, run_dir, "tiny-cpu")
    log = _open(cfg, run_dir)
    _train(log, STEPS)
    log.close()
    _outputs(run_dir)
    finish_runs(cfg.tracking, run_dir, 0)
    return run_dir, _run_id(run_dir, "mlflow")


def _check_mlflow(uri: str, run_dir: Path, run_id: str, tmp_path: Path) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "run-a"
    assert client.get_experiment(run.info.experiment_id).name == "ngrpo-ray"
    params = run.data.params
    assert len(params) == len(flat_params(_cfg().model_dump(mode="json"))) > 100
    assert params["cluster.env_vars.HF_TOKEN"] == "<redacted>" and SECRET not in json.dumps(params)
    assert params["train.steps"] == "280" and params["tracking.backends"] == '["tensorboard", "mlflow"]'
    for key in KEYS:
        history = client.get_metric_history(run_id, key)
        assert [m.step for m in history] == list(STEPS), key
        assert [m.value for m in history] == pytest.approx([float(metrics_row(s)[key]) for s in STEPS])
    assert not {"weights_fingerprint", "kl_ref", "step"} & set(run.data.metrics)  # text, None, the step
    history = {key: [(m.step, m.value) for m in client.get_metric_history(run_id, key)]
               for key in ("eval/before/tool_accuracy", "eval/after/per_category/combo")}
    assert history == {"eval/before/tool_accuracy": [(0, pytest.approx(0.40))],
                       "eval/after/per_category/combo": [(12, 0.75)]}
    table = json.loads(Path(client.download_artifacts(run_id, "completions.json", str(tmp_path))).read_text())
    rows = [dict(zip(table["columns"], r)) for r in table["data"]]
    assert [r["step"] for r in rows] == [2, 4, 6, 8, 10, 12] and rows[0]["prompt"] == "buy 2 and check"
    tags = run.data.tags
    assert tags["run_name"] == "run-a" and tags["config"] == "tiny-cpu"
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    assert tags.get("git_commit") == (head.stdout.strip() if head.returncode == 0 else None)
    report = {Path(f.path).name for f in client.list_artifacts(run_id, "report")}
    assert {"report.md", "reward.png", "zero_std.png", "eval.png"} <= report
    assert {Path(f.path).name for f in client.list_artifacts(run_id, "adapter")} == {
        "adapter_config.json", "adapter_model.safetensors"}
    got = client.download_artifacts(run_id, "report/report.md", str(tmp_path))
    assert Path(got).read_text() == (run_dir / "report" / "report.md").read_text()


@pytest.mark.slow
def test_mlflow_server_gets_params_metrics_evals_tags_and_artifacts(mlflow_server, tmp_path):
    run_dir, run_id = _mlflow_run(mlflow_server, tmp_path)
    _check_mlflow(mlflow_server, run_dir, run_id, tmp_path)
    # TensorBoard, beside it, still has every step
    assert [s for s, _ in read_scalars(run_dir / "tensorboard")["reward_mean"]] == list(STEPS)


def test_mlflow_through_an_sqlite_uri(sqlite_uri, tmp_path):
    run_dir, run_id = _mlflow_run(sqlite_uri, tmp_path)
    _check_mlflow(sqlite_uri, run_dir, run_id, tmp_path)


def test_an_sqlite_store_keeps_the_artifacts_in_the_run_directory(offline, tmp_path, monkeypatch):
    """A store of its own, first opened from another directory (MLflow resolves its default artifact root,
    ./mlruns, when it opens a store): the report and the adapter go to <run>/mlflow/, nothing to ./mlruns."""
    from mlflow import MlflowClient

    elsewhere = tmp_path / "started-here"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    uri = f"sqlite:///{tmp_path}/store/mlflow.db"
    (tmp_path / "store").mkdir()
    run_dir, run_id = _mlflow_run(uri, tmp_path)
    assert list(elsewhere.iterdir()) == []  # no ./mlruns, nothing else
    run = MlflowClient(tracking_uri=uri).get_run(run_id)
    assert Path(run.info.artifact_uri) == run_dir.resolve() / "mlflow"
    assert (run_dir / "mlflow" / "report" / "report.md").read_text() == (
        run_dir / "report" / "report.md").read_text()
    assert {p.name for p in (run_dir / "mlflow" / "adapter").iterdir()} == {
        "adapter_config.json", "adapter_model.safetensors"}
    _check_mlflow(uri, run_dir, run_id, tmp_path)  # MLflow finds them there


def test_a_resumed_run_continues_the_same_mlflow_run_without_duplicate_steps(sqlite_uri, tmp_path):
    from mlflow import MlflowClient

    run_dir = tmp_path / "run-r"
    cfg = _cfg("tracking.backends=[mlflow]", f"tracking.mlflow_uri={sqlite_uri}")
    _train(_open(cfg, run_dir), range(1, 5), after=False)  # then the process dies: nothing is closed
    first = _run_id(run_dir, "mlflow")
    log = _open(cfg, run_dir)  # resumed from the checkpoint of step 2: steps 3-4 come again
    log.truncate_metrics(2)
    _train(log, range(3, 7))
    log.close()
    finish_runs(cfg.tracking, run_dir, 0)
    assert _run_id(run_dir, "mlflow") == first
    client = MlflowClient(tracking_uri=sqlite_uri)
    for key in KEYS:
        assert [m.step for m in client.get_metric_history(first, key)] == [1, 2, 3, 4, 5, 6], key
    assert len(client.get_metric_history(first, "eval/before/tool_accuracy")) == 1
    assert len(client.search_runs([client.get_run(first).info.experiment_id],
                                  filter_string="attributes.run_name = 'run-r'")) == 1
    rows = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in rows] == [1, 2, 3, 4, 5, 6]


def wandb_records(path: Path):
    """The records of a .wandb file (a LevelDB-style log of wandb's own protobuf Records)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data, block = path.read_bytes(), 32768
    assert data[:4] == b":W&B"
    pos, parts = 7, b""  # after the file header: magic, version
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        size, kind = int.from_bytes(data[pos + 4:pos + 6], "little"), data[pos + 6]
        if pos + 7 + size > len(data):  # still being written
            return
        chunk, pos = data[pos + 7:pos + 7 + size], pos + 7 + size
        if kind == 1:  # full
            yield pb.Record.FromString(chunk)
        elif kind == 2:  # first, middle..., last
            parts = chunk
        elif kind == 3:
            parts += chunk
        elif kind == 4:
            yield pb.Record.FromString(parts + chunk)


def test_wandb_offline_run_and_its_resume(offline, tmp_path):
    run_dir = tmp_path / "run-w"
    cfg = _cfg("tracking.backends=[wandb]", "tracking.project=ngrpo-test")
    note_tags(cfg.tracking, run_dir, "tiny-cpu")
    log = _open(cfg, run_dir)
    _train(log, range(1, 5), after=False)
    log.close()
    run_id = _run_id(run_dir, "wandb")
    log = _open(cfg, run_dir)  # resumed from step 2
    log.truncate_metrics(2)
    _train(log, range(3, 7), after=False)
    log.eval("after", {**EVAL["after"], "policy_version": 6})
    log.close()
    _outputs(run_dir)
    finish_runs(cfg.tracking, run_dir, 0)
    assert _run_id(run_dir, "wandb") == run_id

    # One offline folder a session (offline-run-<time>-<id>[-n]), its records in run-<id>.wandb, each
    # complete (its exit record written) once the tracker is closed: W&B's service may still be writing
    # it when finish() returns, so the trackers wait for it.
    sessions = Path(offline["WANDB_DIR"], "wandb")
    logs = [list(wandb_records(f)) for f in sessions.glob("offline-run-*/*.wandb")]
    assert len(logs) == 3, list(sessions.iterdir())  # the run, its resume, the driver's artifacts
    assert all(any(r.HasField("exit") for r in log) for log in logs)
    logs.sort(key=lambda log: next(r.run.start_time.ToNanoseconds() for r in log if r.HasField("run")))
    records = [r for log in logs for r in log]
    steps: dict[str, list[int]] = {}
    for r in records:
        if r.WhichOneof("record_type") == "history":
            for item in r.history.item:
                steps.setdefault(item.key or "/".join(item.nested_key), []).append(r.history.step.num)
    for key in KEYS:
        assert steps[key] == [1, 2, 3, 4, 5, 6], (key, steps, sessions)
    assert steps["eval/before/tool_accuracy"] == [0] and steps["eval/after/tool_accuracy"] == [6]
    # a table each, none twice after the resume (W&B records a table by its summary keys)
    assert steps["completions/nrows"] == [2, 4, 6]
    assert "weights_fingerprint" not in steps and "kl_ref" not in steps
    runs = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert {r.run_id for r in runs} == {run_id} and {r.project for r in runs} == {"ngrpo-test"}
    assert runs[0].display_name == "run-w" and all("config:tiny-cpu" in r.tags for r in runs)
    config = {u.key: json.loads(u.value_json) for u in runs[0].config.update}
    assert config["train.steps"] == 280 and config["cluster.env_vars.HF_TOKEN"] == "<redacted>"
    assert len([k for k in config if not k.startswith("_")]) == len(flat_params(cfg.model_dump(mode="json")))
    artifacts = {r.artifact.type: {c.path for c in r.artifact.manifest.contents}
                 for r in records if r.WhichOneof("record_type") == "artifact"}
    assert {"report.md", "reward.png"} <= artifacts["report"]
    assert artifacts["model"] == {"adapter_config.json", "adapter_model.safetensors"}
    # no file W&B wrote holds the secret
    assert not [p for p in sessions.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


def test_a_missing_package_is_named_with_its_install_line(monkeypatch):
    from actors.driver.preflight import _trackers

    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if it were not installed
    (line,) = _trackers(_cfg("tracking.backends=[tensorboard, mlflow, wandb]"))
    assert line.startswith("tracking.backends: mlflow") and "pip install '.[mlflow]'" in line
    assert unavailable(["tensorboard", "wandb"]) == []


@pytest.mark.slow
def test_train_refuses_a_tracker_whose_package_is_missing_before_anything_starts(tmp_path):
    # _run is replaced by None: had the check let the run through, it would fail at once, not train.
    code = ("import sys; sys.modules['mlflow'] = None; import train; train._run = None; "
            "sys.exit(train.main(sys.argv[1:]))")
    p = subprocess.run([sys.executable, "-c", code, "--set", f"train.run_dir={tmp_path}",
                        "--set", "tracking.backends=[mlflow]"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "tracking.backends: mlflow" in p.stderr and "pip install '.[mlflow]'" in p.stderr
    assert "Traceback" not in p.stderr


def test_a_tracker_that_fails_mid_run_is_logged_once_counted_and_dropped(sqlite_uri, tmp_path, caplog):
    from mlflow import MlflowClient

    run_dir = tmp_path / "run-f"
    cfg = _cfg("tracking.backends=[mlflow, tensorboard]", f"tracking.mlflow_uri={sqlite_uri}")
    log = _open(cfg, run_dir)
    _train(log, range(1, 4), after=False)
    MlflowClient(tracking_uri=sqlite_uri).delete_run(_run_id(run_dir, "mlflow"))  # its next write raises
    with caplog.at_level("WARNING", logger="observe.tracking"):
        _train(log, range(4, 7), before=False)
        log.close()
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "observe.tracking"]
    assert warning.startswith("tracker mlflow failed and is dropped")
    events = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    (dropped,) = [e for e in events if e["event"] == "tracker_dropped"]
    assert dropped["tracker"] == "mlflow" and dropped["failures"] == 1 and log.tracker_failures == 1
    assert [s for s, _ in read_scalars(run_dir / "tensorboard")["reward_mean"]] == [1, 2, 3, 4, 5, 6]
    assert read_scalars(run_dir / "tensorboard")["eval/after/tool_accuracy"] == [(12, pytest.approx(0.52))]
    assert (run_dir / "metrics.jsonl").read_text().count("\n") == 6


def test_a_tracker_that_cannot_open_is_an_event_and_the_others_go_on(tmp_path):
    def broken():
        raise ConnectionError("no server at http://127.0.0.1:9")

    fan = Trackers()
    fan.open("tensorboard", lambda: TensorBoardLog(tmp_path / "tensorboard"))
    fan.open("mlflow", broken)
    log = RunLog(tmp_path, trackers=fan)
    log.metrics({"step": 1, "reward_mean": 0.5})
    log.close()
    events = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert events == [{"event": "tracker_dropped", "tracker": "mlflow",
                       "error": "ConnectionError: no server at http://127.0.0.1:9", "failures": 1}]
    assert read_scalars(tmp_path / "tensorboard")["reward_mean"] == [(1, 0.5)]


def test_the_default_tracking_is_tensorboard_as_before(tmp_path):
    cfg = _cfg()
    assert cfg.tracking.backends == ["tensorboard"]
    for _name, log in (("new", _open(cfg, tmp_path / "new")), ("old", RunLog(tmp_path / "old"))):
        _train(log, STEPS)
        log.close()
    assert read_scalars(tmp_path / "new" / "tensorboard") == read_scalars(tmp_path / "old" / "tensorboard")
    note_tags(cfg.tracking, tmp_path / "new", "tiny-cpu")
    finish_runs(cfg.tracking, tmp_path / "new", 0)
    assert not (tmp_path / "new" / "tracking.json").exists()  # TensorBoard needs no bookkeeping
    assert _cfg("tracking.backends=[]").tracking.backends == []


@pytest.mark.parametrize("value,message", [("[mlflow, mlflow]", "more than once"),
                                           ("[neptune]", "tensorboard")])
def test_bad_backends_are_refused(value, message):
    from configs.loader import ConfigError

    with pytest.raises(ConfigError, match=message):
        _cfg(f"tracking.backends={value}")


def test_doctests():
    assert doctest.testmod(tracking).failed == 0
