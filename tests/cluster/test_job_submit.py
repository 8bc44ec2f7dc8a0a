"""`ray job submit` against a real head started with `ray start --head`, as a user on a cluster does.

The head is a plain one on this 2-core machine (Ray counts the CPUs itself) with token authentication
on, the way the cluster files run it: the default preset's roles must fit it, and the Jobs API must
refuse a client without the token. One short training job (3 RL steps, tiny model) is submitted with
the CLI from the repo root. While it runs, the node's Prometheus export is scraped for the training
metrics and the dashboard's state API is asked for the actors' names. The head is started with
`--block` in a child process, so stopping that process stops exactly this head (never `ray stop`,
which would stop every Ray on the machine).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from cluster.runtime import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.vllm, pytest.mark.deepspeed]

BIN = Path(sys.executable).parent
RUN = "submitted"
OVERRIDES = [
    "rollout.n=4", "rollout.max_tokens=24",
    "rollout.kv_cache_memory_bytes=67108864", "train.prompts_per_step=4", "train.steps=3",
    "train.eval_limit=12",
    "train.warmup.enabled=false", "algorithm.ngrpo.mode=on", f"train.run_name={RUN}", "train.progress=false",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


TOKEN = secrets.token_hex(16)


def _get(url: str, timeout: float = 5.0, token: str | None = TOKEN) -> str:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    req = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(req, timeout=timeout) as r:  # noqa: S310 - local test cluster
        return r.read().decode()


def _logs(api: str) -> str:
    return json.loads(_get(f"{api}/logs"))["logs"]


def _start_head(log_path: Path, env: dict) -> tuple[subprocess.Popen, dict]:
    """One `ray start --head --block` on fresh ports; returns the process and the ports it was given."""
    ports = {k: _free_port() for k in ("gcs", "dashboard", "metrics", "client", "agent", "agent_grpc", "env")}
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [str(BIN / "ray"), "start", "--head", "--block", "--node-ip-address=127.0.0.1",
             f"--port={ports['gcs']}", "--include-dashboard=true", "--dashboard-host=127.0.0.1",
             f"--dashboard-port={ports['dashboard']}", f"--metrics-export-port={ports['metrics']}",
             f"--ray-client-server-port={ports['client']}", f"--dashboard-agent-listen-port={ports['agent']}",
             f"--dashboard-agent-grpc-port={ports['agent_grpc']}", f"--runtime-env-agent-port={ports['env']}",
             f"--object-store-memory={400 * 1024**2}"],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    return proc, ports


def _stop_head(proc: subprocess.Popen) -> None:
    proc.terminate()  # --block: the ray start process stops the processes it started
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)


def _answers(proc: subprocess.Popen, dashboard: str, seconds: float) -> bool:
    """Whether the jobs API answers before `seconds` pass or the head process ends."""
    deadline = time.monotonic() + seconds
    # the jobs API answers a little after the head is up (docs/platform.md#ray-start-up-and-auth)
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            _get(f"{dashboard}/api/version")
            return True
        except OSError:
            time.sleep(1)
    return False


@pytest.fixture(scope="module")
def head(tmp_path_factory):
    """A head on 127.0.0.1 with dashboard (jobs API) and a metrics export port; stopped afterwards.

    The ports are picked free and then handed to `ray start`, so another process can take one in
    between; a head that exits or never answers is stopped and started once more on new ports, and
    a second failure shows both logs' tails."""
    env = {
        **os.environ,
        # Token authentication, as the cluster files set it (docs/platform.md#ray-start-up-and-auth); the CLI
        # and the job client take the token from the environment.
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": TOKEN,
        "RAY_metrics_report_interval_ms": "1000",  # export every second so a short job is seen
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",  # the job's `python` is this venv's
    }
    env.pop("RAY_ADDRESS", None)
    folder = tmp_path_factory.mktemp("head")
    tails = []
    for attempt in range(2):
        log_path = folder / f"head{attempt}.log"
        proc, ports = _start_head(log_path, env)
        dashboard = f"http://127.0.0.1:{ports['dashboard']}"
        if _answers(proc, dashboard, 180):
            break
        _stop_head(proc)
        tails.append(f"--- {log_path} (exit {proc.returncode}) ---\n{log_path.read_text()[-3000:]}")
    else:
        raise RuntimeError("ray head did not start twice:\n" + "\n".join(tails))
    try:
        yield {"dashboard": dashboard, "metrics": f"http://127.0.0.1:{ports['metrics']}/metrics", "env": env}
    finally:
        _stop_head(proc)


@pytest.fixture(scope="module")
def job(head, tmp_path_factory):
    """Submit the short run with the CLI; follow it, scrape metrics and list actors with the Jobs
    API's REST endpoints and the token (this process may hold another Ray's token already)."""

    run_root = tmp_path_factory.mktemp("runs")
    sid = f"ngrpo-test-{int(time.time())}"
    t0 = time.monotonic()
    subprocess.run(
        [str(BIN / "ray"), "job", "submit", "--address", head["dashboard"], "--working-dir", ".",
         "--submission-id", sid, "--no-wait", "--", "python", "train.py", "--config", "tiny-cpu",
         *[a for o in OVERRIDES + [f"train.run_dir={run_root}"] for a in ("--set", o)]],
        cwd=ROOT, env=head["env"], check=True, capture_output=True, text=True, timeout=120,
    )
    api = f"{head['dashboard']}/api/jobs/{sid}"
    scrapes, names = [], set()
    while True:
        status = json.loads(_get(api))["status"]
        if status in ("SUCCEEDED", "FAILED", "STOPPED"):
            break
        if time.monotonic() - t0 > 900:
            raise TimeoutError(f"job {sid} still {status} after 900s:\n{_logs(api)[-3000:]}")
        try:
            scrapes.append(_get(head["metrics"]))
            actors = json.loads(_get(f"{head['dashboard']}/api/v0/actors?limit=1000"))
            names |= {a.get("name") for a in actors["data"]["result"]["result"] if a.get("name")}
        except (OSError, KeyError, ValueError):
            pass  # the export or the state API may not answer in the first seconds
        time.sleep(2)
    return {
        "status": status, "seconds": time.monotonic() - t0, "logs": _logs(api),
        "run_dir": run_root / RUN, "scrapes": scrapes, "names": names,
    }


def test_job_succeeds_and_writes_its_run_directory(job):
    print(f"\njob-submission test: {job['seconds']:.0f}s from submit to {job['status']}")
    assert job["status"] == "SUCCEEDED", job["logs"][-4000:]
    rows = [json.loads(x) for x in (job["run_dir"] / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert [r["policy_version"] for r in rows] == [1, 2, 3]
    ev = json.loads((job["run_dir"] / "eval.json").read_text())
    assert set(ev) == {"before", "after"}
    assert (job["run_dir"] / "adapter" / "adapter_model.safetensors").exists()
    assert list((job["run_dir"] / "tensorboard").glob("events.out.tfevents.*"))
    report = (job["run_dir"] / "report" / "report.md").read_text()
    assert "zero_std.png" in report and (job["run_dir"] / "report" / "zero_std.png").stat().st_size > 1000
    assert f"run directory: {job['run_dir']}" in job["logs"]  # the driver says where its outputs are


def test_training_metrics_reach_the_prometheus_export(job):
    text = "\n".join(job["scrapes"])
    for name in ("ray_ngrpo_frac_reward_zero_std", "ray_ngrpo_active", "ray_ngrpo_reward_mean",
                 "ray_ngrpo_accuracy", "ray_ngrpo_phase_seconds_bucket"):
        assert re.search(rf'^{name}\{{[^}}]*run="{RUN}"', text, re.M), f"{name} not exported for run {RUN}"
    # NGRPO is forced on in this run: the exported gauge says so.
    assert re.search(rf'^ray_ngrpo_active\{{[^}}]*run="{RUN}"[^}}]*\}} 1(\.0)?$', text, re.M)
    assert re.search(r'^ray_ngrpo_accuracy_by_category\{[^}]*category="[a-z]+"', text, re.M)


def test_actors_have_readable_names(job):
    want = {f"{RUN}/coordinator", f"{RUN}/rollout-0", f"{RUN}/learner-0", f"{RUN}/reward-0",
            f"{RUN}/reward-1"}
    assert want <= job["names"], f"missing {sorted(want - job['names'])}; saw {sorted(job['names'])}"


def test_the_jobs_api_refuses_a_client_without_the_token(head):
    import urllib.error

    with pytest.raises(urllib.error.HTTPError) as refused:
        _get(f"{head['dashboard']}/api/jobs/", token=None)
    assert refused.value.code in (401, 403)
    assert _get(f"{head['dashboard']}/api/jobs/") is not None  # with the token it answers
