"""A warm-up trained once is reused, byte for byte, by a later run of the same inputs; any other input
trains anew; an entry a crash left unfinished is never used; `train.warmup.cache: false` neither reads
nor writes."""

from __future__ import annotations

import shutil

import pytest

from actors.driver.setup_steps import run_warmup
from cluster.backend import LocalBackend
from configs.loader import load_config
from models.warmup_cache import warmup_key

EXAMPLES = [("user\nsend 500 to ACC123", '{"thought": "t"}'), ("user\nsell 5 AMZN", '{"thought": "s"}')]
SMALL = ["train.warmup.steps=2", "train.warmup.batch_size=2"]


class CountingBackend(LocalBackend):
    """The in-process backend, counting the warm-ups it really trains."""

    def __init__(self):
        self.trained = 0

    def task(self, fn, args, kwargs, options):
        self.trained += 1
        return super().task(fn, args, kwargs, options)


@pytest.fixture
def warm(tiny_paths, tmp_path, monkeypatch):
    monkeypatch.setenv("NGRPO_CACHE", str(tmp_path / "cache"))
    backend = CountingBackend()

    def run(name, overrides=(), examples=EXAMPLES):
        stats = run_warmup(load_config("tiny-cpu", [*SMALL, *overrides]), backend, examples, None, None,
                           (str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), str(tmp_path / name)))
        return stats, (tmp_path / name / "model.safetensors").read_bytes()

    run.backend = backend
    run.entries = tmp_path / "cache" / "warmups"
    return run


def test_a_second_run_reuses_the_warm_up_byte_for_byte_without_training_it(warm):
    first, w1 = warm("a")
    second, w2 = warm("b")
    assert warm.backend.trained == 1
    assert "warmup_reused" not in first and second["warmup_reused"]
    assert w2 == w1
    assert second["warmup_loss_last"] == first["warmup_loss_last"]
    assert second["warmup_trained_seconds"] == first["warmup_seconds"] > second["warmup_seconds"]
    fresh, w3 = warm("c", ["train.warmup.cache=false"])  # what training it again would have given
    assert warm.backend.trained == 2 and w3 == w1 and fresh["warmup_loss_last"] == first["warmup_loss_last"]


def test_another_seed_setting_or_example_trains_anew(warm):
    _, w0 = warm("a")
    _, w1 = warm("seed", ["train.seed=1"])
    _, w2 = warm("lr", ["train.warmup.lr=1e-2"])
    _, w3 = warm("rows", examples=EXAMPLES[:1])
    assert warm.backend.trained == 4
    assert len({w0, w1, w2, w3}) == 4
    assert len(list(warm.entries.iterdir())) == 4


def test_an_entry_left_unfinished_is_not_used_and_is_stored_again(warm):
    warm("a")
    (entry,) = warm.entries.iterdir()
    (entry / "DONE").unlink()  # as a crash between writing the model and marking it done leaves it
    (entry / "model" / "model.safetensors").write_bytes(b"half")
    stats, weights = warm("b")
    assert warm.backend.trained == 2 and "warmup_reused" not in stats and weights != b"half"
    assert (entry / "DONE").exists() and (entry / "model" / "model.safetensors").read_bytes() == weights
    assert warm("c")[1] == weights and warm.backend.trained == 2


def test_without_the_cache_nothing_is_read_or_written(warm):
    warm("a", ["train.warmup.cache=false"])
    warm("b", ["train.warmup.cache=false"])
    assert warm.backend.trained == 2 and not warm.entries.exists()


def test_the_key_covers_the_model_files_and_the_thread_count(tiny_paths, tmp_path):
    model, tok = tmp_path / "model", tmp_path / "tokenizer"
    shutil.copytree(tiny_paths.model_dir, model)
    shutil.copytree(tiny_paths.tokenizer_dir, tok)
    inputs = {"examples": EXAMPLES, "threads": 2}
    key = warmup_key(inputs, (str(model), str(tok)))
    assert warmup_key(dict(inputs), (str(model), str(tok))) == key
    assert warmup_key({**inputs, "threads": 1}, (str(model), str(tok))) != key
    cfg = tok / "tokenizer_config.json"
    cfg.write_text(cfg.read_text() + " ")
    assert warmup_key(inputs, (str(model), str(tok))) != key
    with pytest.raises(TypeError, match="cannot be part of the cache key"):
        warmup_key({"examples": object()}, (str(model), str(tok)))
