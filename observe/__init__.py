"""Watching a run: metrics exported while it trains, and artifacts people would rather look at than read.

- `ray_metrics`: metrics rows as Ray gauges/counters (Ray dashboard, Prometheus); `grafana`: its dashboard;
  `prometheus`: a Prometheus server that scrapes Ray's export (`make prometheus`).
- `tensorboard`: metrics rows and eval tables as TensorBoard scalars in `<run_dir>/tensorboard/`.
- `tracking`: the same records fanned out to the configured trackers (TensorBoard, MLflow, W&B);
  `tracker_backends`: the MLflow and W&B trackers themselves.
- `runs`: reading a run directory back, tolerant of runs that died half-way.
- `plots`, `report`: PNG plots and a Markdown report of one run directory; `faults`: what it survived.
- `compare`: several runs in one figure.

    python -m observe.report runs/<run>                       # writes runs/<run>/report/
    python -m observe.compare runs/a runs/b --out cmp.png     # one figure, one line per run
"""
