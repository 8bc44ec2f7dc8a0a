"""The preflight's checks of the model, before Ray starts: it resolves (a packaged one is converted on
first use, a missing one names the command that installs it), its context holds rollout.max_model_len and
every prompt with room to answer, and the roles' planned memory fits this machine. Each problem is one line
(`actors.driver.preflight`)."""

from __future__ import annotations

import os
from pathlib import Path

from configs.root import Config


def memory_problems(cfg: Config, model_dir, total: float | None = None) -> list[str]:
    """A run that starts its own Ray on this machine: every role's planned peak memory (models.memory),
    with Ray's own processes and object store, against `total` (this machine's memory, of which 10% is
    left to the system). Whether the run plans at all is `plans_memory`."""
    from models.memory import GB, OVERHEAD, ModelShape, describe, plan

    shape = ModelShape.of_folder(model_dir)
    if shape is None:
        return []
    if total is None:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    roles = plan(cfg, shape)
    fixed = OVERHEAD["ray"] + OVERHEAD["driver"] + cfg.cluster.object_store_memory
    need = sum(r.total for r in roles) + fixed
    budget = 0.9 * total
    if need <= budget:
        return []
    return [f"memory: the run would need about {need / GB:.1f} GB at its peak but this machine has "
            f"{total / GB:.1f} GB ({budget / GB:.1f} GB usable): {describe(roles)}, plus Ray and the driver; "
            "lower learner.activation_gb or learner.micro_batch_tokens, rollout.kv_cache_memory_bytes, "
            "rollout.num_workers or learner.world_size"]


def plans_memory(cfg: Config) -> bool:
    """The run starts its own Ray on this machine. A cluster's nodes (`cluster.address`, RAY_ADDRESS)
    are not known before the driver attaches, nor are those of a Ray this process already joined (a
    notebook's, a test session's): their memory is not this machine's to plan."""
    import ray

    return not (cfg.cluster.address or os.environ.get("RAY_ADDRESS") or ray.is_initialized())


def model_problems(cfg: Config, task):
    """(the model's paths, problems): the model resolved (a packaged one converted on first use) and its
    context checked against rollout.max_model_len."""
    from models.packaged import ModelMissing
    from models.resolve import resolve_model

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        paths = resolve_model(cfg.model, task.corpus, task.vocabulary())
    except ModelMissing as e:
        return None, [f"model.name: {e}"]
    return paths, context_problems(cfg, paths)


def prompt_length_problems(cfg: Config, task, rows: list[dict], paths) -> list[str]:
    from models.tokenizers import load_tokenizer

    try:
        tok = load_tokenizer(paths.tokenizer_dir)
    except OSError as e:
        return ["model.name: cannot load the tokenizer of "
                f"{cfg.model.tokenizer or cfg.model.name} offline ({e})"]
    limit = cfg.rollout.max_model_len - cfg.rollout.max_tokens
    lengths = [len(tok(task.render_prompt(tok, r), add_special_tokens=False)["input_ids"]) for r in rows]
    too_long = [i for i, n in enumerate(lengths) if n > limit]
    if not too_long:
        return []
    worst = max(too_long, key=lambda i: lengths[i])
    return [f"rollout.max_model_len: {len(too_long)} prompts do not leave rollout.max_tokens="
            f"{cfg.rollout.max_tokens} tokens to answer in {cfg.rollout.max_model_len} (the longest has "
            f"{lengths[worst]} tokens: {rows[worst]['prompt'][:60]!r}); raise rollout.max_model_len"]


def context_problems(cfg: Config, paths) -> list[str]:
    """rollout.max_model_len against the model's context: `max_position_embeddings` of the config.json in
    the model's folder, or of a hub id in the offline Hugging Face cache. vLLM refuses a longer engine, but
    only once a worker starts. Without a config.json, or with rope scaling (which vLLM extends the context
    by), the check is left to vLLM."""
    import json

    file = Path(paths.model_dir) / "config.json"
    if not file.is_file():
        from huggingface_hub import try_to_load_from_cache

        try:
            found = try_to_load_from_cache(str(paths.model_dir), "config.json")
        except ValueError:  # neither a folder nor a hub id: nothing to read
            return []
        if not isinstance(found, str):
            return []
        file = Path(found)
    try:
        conf = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    conf = (conf.get("text_config") or conf) if isinstance(conf, dict) else {}  # multimodal: the text model's
    context = conf.get("max_position_embeddings")
    if not isinstance(context, int) or conf.get("rope_scaling") or cfg.rollout.max_model_len <= context:
        return []
    return [(f"rollout.max_model_len ({cfg.rollout.max_model_len}) must be at most the model's context "
             f"(max_position_embeddings {context} in {file}); lower rollout.max_model_len")]
