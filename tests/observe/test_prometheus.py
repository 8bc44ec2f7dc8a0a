"""Every Grafana panel's PromQL against a real Prometheus that scraped Ray's metrics export of real runs.

A Ray head (`ray start --head`, dashboard on, its own temp dir) writes its service discovery file; a
Prometheus server (Debian's `prometheus`, which `make test-all` installs where it can; missing, these tests
are skipped, and fail under CI=true: tests/needs.py) reads that file through the config
`observe.prometheus` writes, the one `make prometheus` serves, and scrapes every second. Two short runs
go to the head one after the other: the fund assistant (with an extra reward function that fails on some
completions and hangs on a few, so its actor is replaced, and NGRPO's switch thresholds at 0 so that it
switches) and the agent preset (agent
episodes). Then each panel's queries, `$run` filled in with a run's name, go to `/api/v1/query` at the
moment that run ended, while the head is still up. Each panel must return series for each run it applies
to, and each query for at least one run; the table of counts is printed (`pytest -s`).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from cluster.runtime import ROOT
from observe.grafana import PANELS, dashboard
from observe.prometheus import command, sd_file, write_config
from tests.needs import program

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.vllm, pytest.mark.deepspeed]

BIN = Path(sys.executable).parent
TOKEN = secrets.token_hex(16)
SHORT = ["rollout.n=4", "rollout.max_tokens=24", "rollout.kv_cache_memory_bytes=67108864",
         "train.prompts_per_step=4", "train.eval_limit=8", "train.warmup.enabled=false",
         "train.progress=false"]
FAILING = "tests.observe.test_prometheus:fails_on_some"
RUNS = {  # run name → (preset, overrides)
    "prom-text": ("tiny-cpu", [
        *SHORT, "train.steps=3", "task.options.n_single=200", "task.options.n_multistep_samples=100",
        # Thresholds at 0: the first step with a zero-spread group switches NGRPO on (a switch event).
        "algorithm.ngrpo.mode=dynamic", "algorithm.ngrpo.on_above=0.0", "algorithm.ngrpo.off_below=0.0",
        "algorithm.ngrpo.window=1",
        f"reward.functions=[{{name: gt, weight: 1.0}}, {{name: '{FAILING}', weight: 0.01}}]",
        "reward.timeout_s=2", "train.max_restarts=50",
    ]),
    "prom-agent": ("tiny-cpu-agent", [
        *SHORT, "train.steps=2", "task.options.n_episodes=60", "env.max_turns=3"]),
}
# What a run of that kind cannot show, and why. Any other empty query fails the test.
NOT_IN = {
    "prom-text": {"Agent episodes": "agent episodes only (env.enabled)"},
    "prom-agent": {},
}
NEVER: dict[str, str] = {}  # queries no run here can fill (none: each event they count is staged)


def fails_on_some(prompts, completions, **columns):
    """A reward function that raises on about one completion in five (by length): reward failures; and
    hangs past reward.timeout_s on a few, so that its actor is replaced (a recovery)."""
    if any(len(c) % 13 == 0 for c in completions):
        time.sleep(30)
    if any(len(c) % 5 == 0 for c in completions):
        raise ValueError("staged reward failure")
    return [0.0] * len(completions)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - local test servers
        return json.loads(r.read().decode() or "null")


def _wait(what: str, ok, proc: subprocess.Popen, log: Path, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            if ok():
                return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start: {log.read_text()[-3000:]}")
        time.sleep(1)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()  # `ray start --block` stops the processes it started; Prometheus stops itself
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)


@pytest.fixture(scope="module")
def stack():
    """A Ray head in its own temp dir and a Prometheus reading its service discovery file."""
    binary = program("prometheus", "Debian/Ubuntu: sudo apt-get install prometheus")
    # Short and private: Ray's socket paths live under it (at most 107 characters) and `ray stop` of
    # another test never meets this head.
    tmp = Path(tempfile.mkdtemp(prefix="ngrpo-prom-", dir="/tmp"))
    ports = {k: _free_port() for k in ("gcs", "dashboard", "metrics", "client", "agent", "agent_grpc", "env",
                                       "prom")}
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": TOKEN,  # as the cluster files run a head
        "RAY_metrics_report_interval_ms": "1000",  # workers report every second: a short run is seen
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    env.pop("RAY_ADDRESS", None)
    head_log, prom_log = tmp / "head.log", tmp / "prometheus.log"
    logs = [open(head_log, "w"), open(prom_log, "w")]
    head = subprocess.Popen(
        [str(BIN / "ray"), "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--temp-dir={tmp}",
         f"--port={ports['gcs']}", "--include-dashboard=true", "--dashboard-host=127.0.0.1",
         f"--dashboard-port={ports['dashboard']}", f"--metrics-export-port={ports['metrics']}",
         f"--ray-client-server-port={ports['client']}", f"--dashboard-agent-listen-port={ports['agent']}",
         f"--dashboard-agent-grpc-port={ports['agent_grpc']}", f"--runtime-env-agent-port={ports['env']}",
         f"--object-store-memory={400 * 1024**2}"],
        env=env, stdout=logs[0], stderr=subprocess.STDOUT, start_new_session=True,
    )
    prom = None
    try:
        sd = sd_file(tmp)
        _wait("ray head (service discovery file)", sd.exists, head, head_log)
        config = write_config(tmp / "prometheus", sd, scrape_interval="1s")
        cmd = command(config, tmp / "prometheus" / "data", f"127.0.0.1:{ports['prom']}", binary)
        prom = subprocess.Popen(cmd, stdout=logs[1], stderr=subprocess.STDOUT, start_new_session=True)
        url = f"http://127.0.0.1:{ports['prom']}"
        _wait("prometheus", lambda: urllib.request.urlopen(f"{url}/-/ready", timeout=2).status == 200,
              prom, prom_log, 60)
        yield {"tmp": tmp, "env": env, "address": f"127.0.0.1:{ports['gcs']}", "url": url,
               "metrics_port": ports["metrics"]}
    finally:
        for p in (prom, head):
            if p is not None:
                _stop(p)
        for f in logs:
            f.close()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def runs(stack):
    """The two short runs, one after the other on the head: name → (started, ended), Unix times."""
    out = {}
    for name, (preset, overrides) in RUNS.items():
        t0 = time.time()
        sets = [*overrides, f"train.run_dir={stack['tmp'] / 'runs'}", f"train.run_name={name}",
                f"cluster.address={stack['address']}"]
        args = [a for s in sets for a in ("--set", s)]
        p = subprocess.run([sys.executable, "train.py", "--config", preset, *args],
                           cwd=ROOT, env=stack["env"], capture_output=True, text=True, timeout=900)
        assert p.returncode == 0, f"run {name} failed:\n{(p.stdout + p.stderr)[-4000:]}"
        out[name] = (t0, time.time())
    time.sleep(3)  # the last scrape of the last run's final values
    return out


def _query(url: str, expr: str, start: float, end: float) -> list[dict]:
    """The series of `expr` over [start, end], as Grafana asks for a time-series panel. Not an instant
    query after the run: a series gone from Ray's export (its actor ended) is marked stale at once."""
    q = urllib.parse.urlencode({"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": "1"})
    body = _get(f"{url}/api/v1/query_range?{q}")
    assert body["status"] == "success", (expr, body)
    return body["data"]["result"]


def _render(expr: str, run: str) -> str:
    """A target as Grafana sends it with one run picked (run names here need no regex escaping)."""
    return expr.replace("${run}", run).replace("$run", run)


def test_prometheus_scrapes_the_node_through_ray_service_discovery(stack, runs):
    targets = _get(f"{stack['url']}/api/v1/targets")["data"]["activeTargets"]
    # Ray lists the node by the machine's address, not 127.0.0.1 (see cluster.runtime.loopback_only).
    node = [t for t in targets if t["labels"]["instance"].endswith(f":{stack['metrics_port']}")]
    assert node and node[0]["health"] == "up", targets


def test_the_run_variable_lists_both_runs(stack, runs):
    variable = next(v for v in dashboard()["templating"]["list"] if v["name"] == "run")
    assert variable["definition"] == "label_values(ray_ngrpo_step, run)"
    start = min(started for started, _ in runs.values())
    q = urllib.parse.urlencode({"match[]": "ray_ngrpo_step", "start": f"{start}"})
    assert set(RUNS) <= set(_get(f"{stack['url']}/api/v1/label/run/values?{q}")["data"])


def test_every_panel_query_returns_series_for_the_runs(stack, runs):
    counts: dict[tuple[str, str], dict[str, int]] = {}  # (panel, expr) → run → series
    for name, (started, ended) in runs.items():
        for title, _, targets, _ in PANELS:
            for expr, _ in targets:
                series = _query(stack["url"], _render(expr, name), started, ended)
                counts.setdefault((title, expr), {})[name] = len(series)
    print("\nruns: " + ", ".join(f"{n} {end - start:.0f}s" for n, (start, end) in runs.items()))
    print("| panel | query | " + " | ".join(RUNS) + " |\n|---|---|" + "---|" * len(RUNS))
    for (title, expr), by_run in counts.items():
        print(f"| {title} | `{expr}` | " + " | ".join(str(by_run[n]) for n in RUNS) + " |")

    problems = []
    for title, _, targets, _ in PANELS:
        for name in RUNS:
            total = sum(counts[(title, expr)][name] for expr, _ in targets)
            if title in NOT_IN[name]:
                if total:
                    problems.append(f"{title}: {total} series for {name}, which cannot have any")
            elif total == 0:
                problems.append(f"{title}: no series for {name}")
        for expr, _ in targets:
            staged = not any(metric in expr for metric in NEVER)
            if staged and not any(counts[(title, expr)].values()):
                problems.append(f"{title}: no series for {expr} in any run")
    assert not problems, "\n".join(problems)
