"""LoRA weights in transit: fingerprint, merge into base weights, save and load in PEFT format.

Owns the mapping between PEFT's state-dict keys and the base model's parameter names. Used by the
learner (export) and by rollout workers (serve), so both sides compute the same fingerprint.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch

from contracts.types import LoraUpdate

_PEFT_PREFIX = "base_model.model."


def fingerprint(weights: dict[str, torch.Tensor]) -> str:
    """A short content hash of LoRA weights (keys and float32 bytes), equal on learner and worker."""
    h = hashlib.sha256()
    for key in sorted(weights):
        t = weights[key].detach().to(torch.float32).contiguous().cpu()
        h.update(key.encode())
        h.update(str(tuple(t.shape)).encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()[:16]


def nbytes(weights: dict[str, torch.Tensor]) -> int:
    """Size of the LoRA weights (what a push moves)."""
    return sum(v.numel() * v.element_size() for v in weights.values())


def base_key(peft_key: str) -> tuple[str, str] | None:
    """`base_model.model.X.q_proj.lora_A.weight` → (`X.q_proj.weight`, "A"); None if not a LoRA key."""
    for side in ("A", "B"):
        suffix = f".lora_{side}.weight"
        if peft_key.endswith(suffix):
            stem = peft_key[: -len(suffix)]
            if stem.startswith(_PEFT_PREFIX):
                stem = stem[len(_PEFT_PREFIX) :]
            return f"{stem}.weight", side
    return None


def merged_weights(
    base: dict[str, torch.Tensor], lora: dict[str, torch.Tensor], scale: float,
    out: dict[str, torch.Tensor] | None = None,
) -> dict[str, torch.Tensor]:
    """The base weights that LoRA changes, with the delta merged: W + scale · B @ A.

    Returns only the touched tensors (a partial reload is enough for vLLM); `base` is not modified,
    so every version merges into the pristine weights rather than accumulating rounding. `out` (a
    dict the caller keeps between calls) holds float32 buffers that are written in place: one fused
    pass a weight (addmm) into memory already mapped, instead of three passes and ~0.4 GB of fresh
    pages a push on SmolLM2-135M (0.5 s of a worker's push here, against 0.1 s).
    """
    pairs: dict[str, dict[str, torch.Tensor]] = {}
    for key, t in lora.items():
        parsed = base_key(key)
        if parsed is None:
            raise ValueError(f"not a LoRA weight key: {key}")
        pairs.setdefault(parsed[0], {})[parsed[1]] = t
    merged = {}
    for name, ab in pairs.items():
        if name not in base:
            raise KeyError(f"LoRA targets {name}, which the base model does not have")
        if set(ab) != {"A", "B"}:
            raise ValueError(f"LoRA weights for {name} lack lora_A or lora_B")
        w, b, a = base[name], ab["B"].to(torch.float32), ab["A"].to(torch.float32)
        if w.dtype != torch.float32 or out is None:
            merged[name] = (w.to(torch.float32) + (b @ a) * scale).to(w.dtype)  # (out, in)
            continue
        buf = out.get(name)
        if buf is None or buf.shape != w.shape:
            buf = out[name] = torch.empty_like(w)
        merged[name] = torch.addmm(w, b, a, alpha=scale, out=buf)
    return merged


def save_peft_adapter(
    weights: dict[str, torch.Tensor], out_dir: Path, *, r: int, alpha: int, target_modules: list[str],
    base_model: str
) -> Path:
    """Write adapter_config.json + adapter_model.safetensors that PEFT and vLLM both load."""
    from safetensors.torch import save_file

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in weights.items()}, str(out_dir / "adapter_model.safetensors"))
    config = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "r": r,
        "lora_alpha": alpha,
        "lora_dropout": 0.0,
        "target_modules": sorted(target_modules),
        "bias": "none",
        "base_model_name_or_path": base_model,
        "fan_in_fan_out": False,
        "inference_mode": True,
        "modules_to_save": None,
    }
    (out_dir / "adapter_config.json").write_text(json.dumps(config, indent=2))
    return out_dir


def load_peft_adapter(adapter_dir: str | Path, version: int = 1) -> LoraUpdate:
    """A PEFT adapter folder (adapter_config.json + adapter_model.safetensors) as a `LoraUpdate` that
    a RolloutWorker can serve; the merge scale is the folder's lora_alpha / r."""
    from safetensors.torch import load_file

    d = Path(adapter_dir)
    conf = json.loads((d / "adapter_config.json").read_text())
    weights = load_file(str(d / "adapter_model.safetensors"))
    return LoraUpdate(version, weights, fingerprint(weights), conf["lora_alpha"] / conf["r"])
