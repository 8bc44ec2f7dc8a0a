"""The GPU cluster manifests agree with the project: docker/Dockerfile with pyproject.toml's pins,
cluster/ray-cluster.yaml with Ray's own cluster-config schema, cluster/kuberay-rayjob.yaml with the 7B
preset it runs, and all of them with each other (image, shared storage, base model).

Nothing here starts Ray, pulls an image or needs a GPU: the files are parsed and checked.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import tomllib
from pathlib import Path

import jsonschema
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from configs.loader import load_config

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "docker" / "Dockerfile"
LAUNCHER = REPO / "cluster" / "ray-cluster.yaml"
RAYJOB = REPO / "cluster" / "kuberay-rayjob.yaml"
SHARED = "/mnt/shared"


# ---- helpers ---------------------------------------------------------------------------------------
def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _exact_pins(reqs: list[str]) -> dict[str, str]:
    """name → version of every `name==version` requirement."""
    pins = {}
    for line in reqs:
        req = Requirement(line)
        specs = list(req.specifier)
        if len(specs) == 1 and specs[0].operator == "==":
            pins[req.name.lower()] = specs[0].version
    return pins


def _dockerfile_args() -> dict[str, str]:
    """`ARG NAME=value` defaults of the Dockerfile."""
    return dict(re.findall(r"^ARG\s+(\w+)=(\S+)\s*$", DOCKERFILE.read_text(), re.M))


def _launcher() -> dict:
    return yaml.safe_load(LAUNCHER.read_text())


def _rayjob_docs() -> list[dict]:
    return [d for d in yaml.safe_load_all(RAYJOB.read_text()) if d]


def _rayjob() -> dict:
    (job,) = [d for d in _rayjob_docs() if d["kind"] == "RayJob"]
    return job


def _pod_specs(job: dict) -> dict[str, dict]:
    """group name → (pod spec, replicas) of the RayJob's cluster; the head is "head" with 1 replica."""
    spec = job["spec"]["rayClusterSpec"]
    out = {"head": (spec["headGroupSpec"]["template"]["spec"], 1)}
    for group in spec["workerGroupSpecs"]:
        out[group["groupName"]] = (group["template"]["spec"], group["replicas"])
    return out


def _ray_schema() -> dict:
    # Ray's own schema, found without importing ray (which would take seconds).
    (ray_dir,) = importlib.util.find_spec("ray").submodule_search_locations
    return json.loads((Path(ray_dir) / "autoscaler" / "ray-schema.json").read_text())


def _run_option_env(options: list[str]) -> dict[str, str]:
    """`-e NAME=value` pairs among docker run options."""
    env = {}
    for opt in options:
        parts = shlex.split(opt)
        for flag, value in zip(parts, parts[1:]):
            if flag in ("-e", "--env") and "=" in value:
                k, v = value.split("=", 1)
                env[k] = v
    return env


def _k8s_cpu(q: str | int) -> float:
    q = str(q)
    return float(q[:-1]) / 1000 if q.endswith("m") else float(q)


def _place(nodes: list[dict[str, float]], groups: list[tuple[str, list[dict[str, float]]]]) -> bool:
    """Place placement groups on nodes as Ray would try to: PACK puts a group's bundles on as few nodes
    as possible (first the node with the most room), SPREAD round-robins over the nodes with room.
    Groups are placed in order (the coordinator creates the learner group first). True if all fit."""
    free = [dict(n) for n in nodes]

    def fits(node, b):
        return all(node.get(k, 0) >= v - 1e-9 for k, v in b.items())

    def take(node, b):
        for k, v in b.items():
            node[k] = node.get(k, 0) - v

    for strategy, bundles in groups:
        if strategy == "PACK":
            used: set[int] = set()
            for b in bundles:
                # A node this group already uses first, then the one with the most GPUs left.
                candidates = sorted((i for i, n in enumerate(free) if fits(n, b)),
                                    key=lambda i: (i not in used, -free[i].get("GPU", 0)))
                if not candidates:
                    return False
                take(free[candidates[0]], b)
                used.add(candidates[0])
        else:  # SPREAD
            i = 0
            for b in bundles:
                for step in range(len(free)):
                    node = free[(i + step) % len(free)]
                    if fits(node, b):
                        take(node, b)
                        i = (i + step + 1) % len(free)
                        break
                else:
                    return False
    return True


def _preset_groups(cfg) -> list[tuple[str, list[dict[str, float]]]]:
    """The placement groups the driver asks for: learner ranks PACK, rollout workers SPREAD."""
    learner = {"CPU": cfg.learner.num_cpus, "GPU": cfg.learner.num_gpus}
    rollout = {"CPU": cfg.rollout.num_cpus, "GPU": cfg.rollout.num_gpus}
    return [("PACK", [learner] * cfg.learner.world_size), ("SPREAD", [rollout] * cfg.rollout.num_workers)]


def _preset_gpus(cfg) -> float:
    return cfg.rollout.num_workers * cfg.rollout.num_gpus + cfg.learner.world_size * cfg.learner.num_gpus


def _entrypoint_config(job: dict) -> Path:
    argv = shlex.split(job["spec"]["entrypoint"])
    assert argv[:2] == ["python", "train.py"], argv
    assert "--config" in argv, argv
    # The entrypoint runs in the job's working_dir, /app in the image: a copy of this repository.
    return REPO / argv[argv.index("--config") + 1]


# ---- Dockerfile ------------------------------------------------------------------------------------
def test_dockerfile_pins_equal_pyproject():
    project = _pyproject()["project"]
    pins = _exact_pins(project["dependencies"]) | _exact_pins(project["optional-dependencies"]["gpu"])
    args = _dockerfile_args()
    assert args["VLLM_VERSION"] == pins["vllm"]
    assert args["DEEPSPEED_VERSION"] == pins["deepspeed"]
    assert args["RAY_VERSION"] == pins["ray"]
    text = DOCKERFILE.read_text()
    # The same packages (with ray's extra) are what the ARGs feed, and the project goes in with `gpu`.
    assert '"vllm==${VLLM_VERSION}"' in text
    assert '"deepspeed==${DEEPSPEED_VERSION}"' in text
    ray_req = Requirement(next(r for r in project["dependencies"] if r.startswith("ray")))
    assert f'"ray[{",".join(sorted(ray_req.extras))}]==${{RAY_VERSION}}"' in text
    assert "pip install '.[gpu]'" in text


def test_dockerfile_python_satisfies_requires_python():
    requires = SpecifierSet(_pyproject()["project"]["requires-python"])
    assert _dockerfile_args()["PYTHON_VERSION"] + ".0" in requires


def test_dockerfile_base_is_a_cuda_devel_image():
    base = _dockerfile_args()["CUDA_IMAGE"]
    assert base.startswith("nvidia/cuda:") and "-devel-" in base
    assert re.search(r"^FROM \$\{CUDA_IMAGE\}$", DOCKERFILE.read_text(), re.M)


def test_dockerignore_keeps_local_state_out_and_the_build_inputs_in():
    lines = {ln.strip() for ln in (REPO / ".dockerignore").read_text().splitlines()}
    lines = {ln for ln in lines if ln and not ln.startswith("#")}
    assert {".venv", ".git", "runs", ".pytest_cache", ".hypothesis", "**/__pycache__"} <= lines
    # `pip install '.[gpu]'` needs pyproject.toml and its readme; the job needs train.py and configs/.
    for needed in ("pyproject.toml", "README.md", "train.py", "configs", "cluster", "actors", "learner"):
        assert needed not in lines and (REPO / needed).exists()


# ---- Ray cluster launcher --------------------------------------------------------------------------
def test_launcher_config_validates_against_rays_schema():
    jsonschema.validate(_launcher(), _ray_schema())


def test_rays_schema_rejects_a_misspelt_key():
    # The check above is a real one: the same schema refuses a typo in the docker section.
    bad = _launcher()
    bad["docker"]["imagee"] = bad["docker"].pop("image")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, _ray_schema())


def test_launcher_config_passes_rays_own_preparation():
    # What `ray up` does before it talks to the cloud: merge the provider defaults, validate.
    from ray.autoscaler._private.util import prepare_config, validate_config

    prepared = prepare_config(_launcher())
    validate_config(prepared)
    assert prepared["provider"]["type"] == "aws"


def test_launcher_has_a_cpu_head_and_two_fixed_gpu_workers():
    cfg = _launcher()
    types = cfg["available_node_types"]
    head = types[cfg["head_node_type"]]
    assert head["resources"].get("GPU", 0) == 0
    assert any("--num-cpus=0" in c for c in cfg["head_start_ray_commands"])  # no actor on the head
    (worker_type,) = [t for name, t in types.items() if name != cfg["head_node_type"]]
    assert worker_type["resources"]["GPU"] == 8
    assert worker_type["min_workers"] == worker_type["max_workers"] == 2
    assert cfg["max_workers"] >= worker_type["min_workers"]
    assert "--gpus all" in cfg["docker"]["worker_run_options"]


# ---- KubeRay ---------------------------------------------------------------------------------------
def test_rayjob_is_a_kuberay_v1_rayjob_that_cleans_up():
    job = _rayjob()
    assert job["apiVersion"] == "ray.io/v1"
    assert job["kind"] == "RayJob"
    assert job["spec"]["shutdownAfterJobFinishes"] is True
    pins = _exact_pins(_pyproject()["project"]["dependencies"])
    assert job["spec"]["rayClusterSpec"]["rayVersion"] == pins["ray"]


def test_rayjob_entrypoint_runs_train_with_a_config_the_loader_accepts():
    job = _rayjob()
    config = _entrypoint_config(job)
    assert config.is_file() and (REPO / "train.py").is_file()
    cfg = load_config(config)
    assert cfg.model.name == "Qwen/Qwen2.5-7B-Instruct"
    # The relative paths resolve because the job's working_dir is the image's copy of the repo.
    runtime_env = yaml.safe_load(job["spec"]["runtimeEnvYAML"])
    workdir = re.search(r"^WORKDIR\s+(\S+)$", DOCKERFILE.read_text(), re.M).group(1)
    assert runtime_env["working_dir"] == workdir
    assert re.search(rf"^COPY \. {re.escape(workdir)}$", DOCKERFILE.read_text(), re.M)


def test_rayjob_gpu_workers_put_gpus_in_limits():
    pods = _pod_specs(_rayjob())
    head, _ = pods.pop("head")
    assert "nvidia.com/gpu" not in head["containers"][0]["resources"].get("limits", {})
    assert _rayjob()["spec"]["rayClusterSpec"]["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"
    for pod, replicas in pods.values():
        res = pod["containers"][0]["resources"]
        # Kubernetes schedules extended resources by their limit; a request, if any, must equal it.
        assert int(res["limits"]["nvidia.com/gpu"]) == 8
        gpus = res["limits"]["nvidia.com/gpu"]
        assert res.get("requests", {}).get("nvidia.com/gpu", gpus) == gpus
        assert replicas == 2


# ---- the preset fits both clusters -----------------------------------------------------------------
def test_preset_gpu_arithmetic():
    cfg = load_config(_entrypoint_config(_rayjob()))
    # A TP group's GPUs are reserved by its worker's bundle: one worker = tensor_parallel_size GPUs.
    assert cfg.rollout.num_gpus == cfg.rollout.tensor_parallel_size
    assert cfg.learner.num_gpus == 1
    assert _preset_gpus(cfg) == 16  # 6 x 2 + 4 x 1: two 8-GPU nodes, nothing idle


def _launcher_nodes() -> list[dict[str, float]]:
    cfg = _launcher()
    nodes = []
    for name, t in cfg["available_node_types"].items():
        if name != cfg["head_node_type"]:
            nodes += [{"CPU": t["resources"]["CPU"], "GPU": t["resources"]["GPU"]}] * t["min_workers"]
    return nodes


def _rayjob_nodes() -> list[dict[str, float]]:
    pods = _pod_specs(_rayjob())
    pods.pop("head")  # num-cpus 0, no GPU: no role actor lands there
    nodes = []
    for pod, replicas in pods.values():
        limits = pod["containers"][0]["resources"]["limits"]
        nodes += [{"CPU": _k8s_cpu(limits["cpu"]), "GPU": float(limits["nvidia.com/gpu"])}] * replicas
    return nodes


@pytest.mark.parametrize("nodes_of", [_launcher_nodes, _rayjob_nodes], ids=["launcher", "kuberay"])
def test_cluster_places_every_actor_of_the_preset(nodes_of):
    cfg = load_config(_entrypoint_config(_rayjob()))
    nodes = nodes_of()
    assert sum(n["GPU"] for n in nodes) >= _preset_gpus(cfg)
    assert _place(nodes, _preset_groups(cfg))
    # ...and the reward actors' CPUs still fit beside them.
    reward = cfg.reward.num_actors * cfg.reward.num_cpus
    used = sum(b["CPU"] for _, bundles in _preset_groups(cfg) for b in bundles)
    assert sum(n["CPU"] for n in nodes) >= used + reward


def test_placement_model_refuses_a_cluster_that_is_too_small():
    # The check above would fail for one 8-GPU node, or for bundles wider than a node.
    cfg = load_config(_entrypoint_config(_rayjob()))
    assert not _place([{"CPU": 96, "GPU": 8}], _preset_groups(cfg))
    assert not _place([{"CPU": 96, "GPU": 8}] * 4, [("SPREAD", [{"CPU": 4, "GPU": 16}])])


# ---- the two clusters agree with each other ---------------------------------------------------------
def _rayjob_containers() -> list[dict]:
    """Every container of the RayJob: the cluster's pods and the submitter pod."""
    out = []
    for pod, _ in _pod_specs(_rayjob()).values():
        out += pod.get("initContainers", []) + pod["containers"]
    return out + _rayjob()["spec"]["submitterPodTemplate"]["spec"]["containers"]


def test_launcher_and_rayjob_use_the_same_image():
    image = _launcher()["docker"]["image"]
    assert {c["image"] for c in _rayjob_containers()} == {image}
    # The tag names the project's version, so an image built from another version is not picked up.
    assert image.rsplit(":", 1)[1].startswith(_pyproject()["project"]["version"])


def test_run_dir_and_model_cache_live_on_storage_every_node_shares():
    cfg = load_config(_entrypoint_config(_rayjob()))
    run_dir = Path(cfg.train.run_dir)
    assert run_dir.is_absolute() and run_dir.is_relative_to(SHARED)

    launcher = _launcher()
    env = _run_option_env(launcher["docker"]["run_options"])
    assert f"-v {SHARED}:{SHARED}" in launcher["docker"]["run_options"]
    assert any(f"{SHARED}" in c and "mount" in c for c in launcher["initialization_commands"])
    assert Path(env["HF_HOME"]).is_relative_to(SHARED)

    docs = _rayjob_docs()
    (pvc,) = [d for d in docs if d["kind"] == "PersistentVolumeClaim"]
    assert "ReadWriteMany" in pvc["spec"]["accessModes"]
    for pod, _ in _pod_specs(_rayjob()).values():
        claim = pvc["metadata"]["name"]
        shared = [v["name"] for v in pod["volumes"]
                  if v.get("persistentVolumeClaim", {}).get("claimName") == claim]
        for c in pod.get("initContainers", []) + pod["containers"]:
            assert any(m["mountPath"] == SHARED and m["name"] in shared for m in c["volumeMounts"]), c["name"]
            c_env = {e["name"]: e.get("value") for e in c.get("env", [])}
            assert c_env["HF_HOME"] == env["HF_HOME"], c["name"]  # the same cache layout as the launcher
    for c in [c for pod, _ in _pod_specs(_rayjob()).values() for c in pod["containers"]]:
        c_env = {e["name"]: e for e in c.get("env", [])}
        assert c_env["RAY_AUTH_MODE"]["value"] == env["RAY_AUTH_MODE"] == "token", c["name"]
        assert c_env["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "ngrpo-ray-auth", c["name"]


def test_both_clusters_run_token_auth_and_keep_the_dashboard_private():
    launcher = _launcher()
    env = _run_option_env(launcher["docker"]["run_options"])
    assert env["RAY_AUTH_MODE"] == "token" and env["RAY_AUTH_TOKEN_PATH"]
    assert "~/.ray/auth_token" in launcher["file_mounts"].values()
    head = " ".join(launcher["head_start_ray_commands"])
    assert "--dashboard-host=127.0.0.1" in head and "0.0.0.0" not in head
    text = (Path(__file__).resolve().parents[2] / "cluster" / "kuberay-rayjob.yaml").read_text()
    assert ("RAY_AUTH_MODE, value: disabled" not in text
            and "kubectl create secret generic ngrpo-ray-auth" in text)


def test_both_clusters_fetch_the_presets_base_model():
    model = load_config(_entrypoint_config(_rayjob())).model.name
    assert any(f"hf download {model}" in c for c in _launcher()["head_setup_commands"])
    (fetch,) = [c for c in _rayjob_containers() if "hf download" in " ".join(c.get("command", []))]
    assert f"hf download {model}" in " ".join(fetch["command"])


# ---- no world-writable storage, tokens from the Secret ------------------------------------------------
def _world_writable(text: str) -> list[str]:
    """Modes in shell commands (chmod, mkdir/install -m, umask) and YAML mode keys that let everyone
    write: a shared folder others can write to lets them plant checkpoints, which are pickled code."""
    found = []
    for m in re.finditer(r"\bchmod\s+(?:-\w+\s+)*([0-7]{3,4}|[ugoa]*[+=][rwxXst]*)", text):
        mode = m.group(1)
        octal = mode.isdigit() and int(mode, 8) & 0o002
        symbolic = not mode.isdigit() and "w" in mode and (re.match(r"[ugo]*[ao]", mode) or mode[0] in "+=")
        if octal or symbolic:
            found.append(m.group(0))
    for m in re.finditer(r"(?:\s-m\s*|--mode[= ])([0-7]{3,4})\b", text):
        if int(m.group(1), 8) & 0o002:
            found.append(m.group(0).strip())
    for m in re.finditer(r"\bumask\s+([0-7]{3,4})\b", text):
        if not int(m.group(1), 8) & 0o002:
            found.append(m.group(0))

    def walk(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("mode", "defaultMode") and isinstance(v, int) and v & 0o002:
                    found.append(f"{k}: {v:o}")
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for doc in yaml.safe_load_all(text):
        walk(doc)
    return found


@pytest.mark.parametrize("path", [LAUNCHER, RAYJOB], ids=["launcher", "kuberay"])
def test_no_world_writable_mode_in_the_cluster_files(path):
    assert _world_writable(path.read_text()) == []


def test_the_world_writable_check_finds_what_it_looks_for():
    for bad in ("sudo chmod 1777 /mnt/shared", "chmod -R 0777 x", "chmod a+w x", "chmod o+rwx x",
                "chmod +w x", "mkdir -p -m 777 /mnt/shared/runs", "install -d --mode=0777 x", "umask 000",
                "volumes: [{name: s, secret: {secretName: x, defaultMode: 0777}}]"):
        assert _world_writable(bad), bad
    for good in ("chmod 0750 /mnt/shared", "chmod 1770 x", "chmod u+w x", "chmod go-w x", "mkdir -m 0750 x",
                 "umask 022", "items: [{key: k, path: p, mode: 0640}]"):
        assert not _world_writable(good), good


def test_launcher_makes_the_shared_mount_the_containers_own():
    (init,) = _launcher()["initialization_commands"]
    # After the mount, and also when it was mounted before (outside the `mountpoint -q ... ||` guard):
    # owned by root, which the containers run as (the Dockerfile sets no USER), mode 0750.
    assert re.search(rf"\)\s*&&\s*sudo chown 0:0 {SHARED} && sudo chmod 0750 {SHARED}$", init), init
    assert not re.search(r"^USER\b", DOCKERFILE.read_text(), re.MULTILINE)
    assert all("-m 0750" in c for c in _launcher()["setup_commands"] if f"mkdir -p {SHARED}" in c)


def test_rayjob_submitter_gets_the_clusters_token_from_the_secret():
    job = _rayjob()
    submitter_pod = job["spec"]["submitterPodTemplate"]["spec"]
    assert submitter_pod["restartPolicy"] == "Never"  # a Kubernetes Job's pod; KubeRay retries nothing
    submitter = submitter_pod["containers"][0]  # KubeRay takes the first container as the submitter
    assert "command" not in submitter  # KubeRay writes `ray job submit ... -- <entrypoint>` itself
    env = {e["name"]: e for e in submitter["env"]}
    assert env["RAY_AUTH_MODE"]["value"] == "token"
    head = _pod_specs(job)["head"][0]["containers"][0]
    head_token = {e["name"]: e for e in head["env"]}["RAY_AUTH_TOKEN"]
    assert env["RAY_AUTH_TOKEN"]["valueFrom"] == head_token["valueFrom"]
    assert (env["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"]
            == {"name": "ngrpo-ray-auth", "key": "auth_token"})
    assert submitter["image"] == head["image"]  # /app, the job's working_dir, is in the image


def test_tokens_come_from_the_secret_only():
    for c in _rayjob_containers():
        for e in c.get("env", []):
            if "TOKEN" in e["name"]:
                assert "value" not in e and "secretKeyRef" in e["valueFrom"], (c["name"], e["name"])
    assert "--set" not in _rayjob()["spec"]["entrypoint"]
