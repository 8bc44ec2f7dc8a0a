"""Rows of a local data file, whatever its format: JSONL, JSON, Parquet, CSV, or a folder written by
`datasets.Dataset.save_to_disk`. A row is a plain dict (nested values stay dicts and lists).

Reading never goes to the network. JSONL and JSON are read with the standard library, line by line, so
an error names the file and the line and `head` reads only the first lines; Parquet, CSV and
`save_to_disk` folders go through the `datasets` package (installed with the `trl` extra).

>>> import json, tempfile, pathlib
>>> f = pathlib.Path(tempfile.mkdtemp()) / "rows.jsonl"
>>> _ = f.write_text('{"prompt": "1+1=", "answer": "2"}\\n{"prompt": "2+2=", "answer": "4"}\\n')
>>> read_rows(f, limit=1)
[{'prompt': '1+1=', 'answer': '2'}]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FORMATS = ("jsonl", "json", "parquet", "csv", "save_to_disk")


class DataFileError(ValueError):
    """A data file that cannot be read as rows; the message names the file (and the line)."""


def file_format(path: str | Path) -> str:
    """The format of `path`, from its suffix (a folder: `save_to_disk`)."""
    p = Path(path)
    if p.is_dir():
        return "save_to_disk"
    suffix = p.suffix.lower().lstrip(".")
    if suffix in ("jsonl", "ndjson"):
        return "jsonl"
    if suffix in FORMATS:
        return suffix
    raise DataFileError(f"{p}: unknown data format {p.suffix!r} (read: .jsonl, .json, .parquet, .csv, "
                        "or a folder written by datasets' save_to_disk)")


def read_rows(path: str | Path, limit: int | None = None) -> list[dict[str, Any]]:
    """The rows of `path` (the first `limit` of them when given)."""
    p = Path(path)
    if not p.exists():
        raise DataFileError(f"{p} does not exist")
    fmt = file_format(p)
    if fmt == "jsonl":
        return _jsonl(p, limit)
    if fmt == "json":
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise DataFileError(f"{p}: not valid JSON ({e})") from None
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise DataFileError(f"{p}: a JSON data file must hold a list of objects (one per row)")
        return data[:limit] if limit is not None else data
    return _with_datasets(p, fmt, limit)


def _jsonl(p: Path, limit: int | None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    try:
        with p.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if limit is not None and len(rows) >= limit:
                    break
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError as e:
                    raise DataFileError(f"{p}:{n}: not valid JSON ({e})") from None
                if not isinstance(row, dict):
                    raise DataFileError(f"{p}:{n}: a row must be a JSON object, got {type(row).__name__}")
                rows.append(row)
    except (OSError, UnicodeDecodeError) as e:
        raise DataFileError(f"{p}: cannot read ({e})") from None
    return rows


def _with_datasets(p: Path, fmt: str, limit: int | None) -> list[dict[str, Any]]:
    try:
        import datasets
    except ImportError:
        raise DataFileError(f"{p}: reading {fmt} needs the `datasets` package "
                            "(pip install -e '.[trl]', or make install)") from None
    datasets.disable_progress_bars()
    try:
        if fmt == "save_to_disk":
            ds = datasets.load_from_disk(str(p))
            if isinstance(ds, datasets.DatasetDict):
                raise DataFileError(f"{p}: a DatasetDict (splits {', '.join(ds)}); give one split's folder, "
                                    f"e.g. {p / next(iter(ds))}")
        else:
            read = datasets.Dataset.from_parquet if fmt == "parquet" else datasets.Dataset.from_csv
            ds = read(str(p))
    except DataFileError:
        raise
    except Exception as e:  # noqa: BLE001 - pyarrow and datasets raise many kinds
        raise DataFileError(f"{p}: cannot read as {fmt} ({type(e).__name__}: {e})") from None
    if limit is not None:
        ds = ds.select(range(min(limit, len(ds))))
    return [dict(r) for r in ds]


def column(row: dict[str, Any], path: str) -> Any:
    """The value at a dotted `path` of a row (`reward_model.ground_truth`); KeyError when missing."""
    value: Any = row
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KeyError(path)
        value = value[part]
    return value
