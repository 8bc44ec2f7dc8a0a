"""The Ray that `train.py` starts on one machine listens on the loopback address only."""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.ray]
ROOT = Path(__file__).resolve().parents[2]

# Runs in a fresh interpreter: the switch must work however much of Ray was imported before.
_PROBE = """
import json, time, psutil, ray
from cluster.runtime import connect
from configs.cluster import ClusterConfig
connect(ClusterConfig(local_num_cpus=1, include_dashboard=True))
ray.get(ray.remote(lambda: 1).remote())  # a worker has started and listens too
time.sleep(2)
tree = [psutil.Process()] + psutil.Process().children(recursive=True)
pids = {p.pid: p.name() for p in tree}
out = [(c.laddr.ip, c.laddr.port, pids[c.pid]) for c in psutil.net_connections(kind="inet")
       if c.status == psutil.CONN_LISTEN and c.pid in pids]
print("LISTEN " + json.dumps(out))
ray.shutdown()
"""


def _loopback(ip: str) -> bool:
    addr = ipaddress.ip_address(ip.split("%")[0])
    mapped = getattr(addr, "ipv4_mapped", None)
    return (mapped or addr).is_loopback


def test_a_local_ray_binds_every_port_to_loopback():
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    proc = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=180)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("LISTEN ")), None)
    assert line, proc.stdout + proc.stderr
    sockets = json.loads(line.removeprefix("LISTEN "))
    names = {name for _, _, name in sockets}
    assert {"gcs_server", "raylet"} <= names, sockets  # the probe saw Ray's own servers
    open_ = [s for s in sockets if not _loopback(s[0])]
    assert not open_, f"listening beyond loopback: {open_}"
