"""A Prometheus server for Ray's metrics export, where the Grafana dashboard (observe/grafana.py) reads.

Ray's dashboard process rewrites ``<session dir>/prom_metrics_service_discovery.json`` every few
seconds with the metrics export address of every live node. A Prometheus that reads it through
``<ray temp dir>/session_latest`` with ``file_sd_configs`` follows nodes that join and leave, and the
next Ray started on the machine, with no ports written down. (Not through the file's other copy,
``<ray temp dir>/prom_metrics_service_discovery.json``: every live Ray with a dashboard re-points that
link to its own session every few seconds, so with two on one machine it flips between them.) Only a
Ray with its dashboard writes the file: a ``ray start --head`` (dashboard on by default), or a local
run with ``--set cluster.include_dashboard=true``.

    python -m observe.prometheus                     # config under /tmp/ngrpo-prometheus, then serve :9090
    make prometheus                                  # the same
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

SD_FILE = "prom_metrics_service_discovery.json"
RAY_TEMP = Path("/tmp/ray")


def sd_file(ray_temp: str | Path = RAY_TEMP) -> Path:
    """Ray's service discovery file of the newest session under a Ray temp dir (``--temp-dir``)."""
    return Path(ray_temp) / "session_latest" / SD_FILE


def write_config(out_dir: str | Path, sd: str | Path, scrape_interval: str = "5s") -> Path:
    """``out_dir/prometheus.yml``: scrape every target listed in `sd` every `scrape_interval`.

    JSON is valid YAML, so the file is written with json and needs no YAML quoting rules."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = {
        # Prometheus refuses a scrape timeout above the interval; the default (10s) is, for short ones.
        "global": {"scrape_interval": scrape_interval, "scrape_timeout": scrape_interval,
                   "evaluation_interval": scrape_interval},
        "scrape_configs": [{
            "job_name": "ray",
            # Re-read every 5s as well as on change: a new session re-points session_latest.
            "file_sd_configs": [{"files": [str(sd)], "refresh_interval": "5s"}],
        }],
    }
    path = out / "prometheus.yml"
    path.write_text(json.dumps(config, indent=2) + "\n")
    return path


def command(config: Path, data_dir: Path, listen: str, binary: str = "prometheus") -> list[str]:
    """The server's command line: its own data dir, so it never touches a system Prometheus's data."""
    return [binary, f"--config.file={config}", f"--storage.tsdb.path={data_dir}",
            f"--web.listen-address={listen}", "--log.level=warn"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ray-temp", default=str(RAY_TEMP), help="Ray's temp dir (ray start --temp-dir)")
    p.add_argument("--dir", default="/tmp/ngrpo-prometheus", help="where the config and the data go")
    p.add_argument("--listen", default="127.0.0.1:9090", help="host:port of Prometheus's web UI and API")
    p.add_argument("--scrape-interval", default="5s")
    args = p.parse_args(argv)
    binary = shutil.which("prometheus")
    if binary is None:
        print("error: no `prometheus` on PATH (Debian/Ubuntu: apt-get install prometheus)", file=sys.stderr)
        return 2
    sd = sd_file(args.ray_temp)
    config = write_config(args.dir, sd, args.scrape_interval)
    if not sd.exists():
        print(f"note: {sd} is not there yet; Prometheus picks it up once a Ray with a dashboard starts",
              file=sys.stderr)
    print(f"Prometheus: http://{args.listen}  (config {config}; Grafana data source: this URL)", flush=True)
    # exec: Ctrl-C (or make's interrupt) stops the server itself, with no Python parent left over.
    cmd = command(config, Path(args.dir) / "data", args.listen, binary)
    os.execv(binary, cmd)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
