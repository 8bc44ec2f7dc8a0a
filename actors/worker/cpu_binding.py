"""vLLM's OpenMP thread binding for a rollout worker with tensor parallelism on the CPU.

vLLM's CPU backend binds each tensor-parallel rank's OpenMP threads to cores. Left to itself
(`VLLM_CPU_OMP_THREADS_BIND=auto`) it gives each rank a NUMA node of its own, and a machine with fewer
NUMA nodes than ranks (most single-socket machines, every cloud VM of a few cores) stops the engine at
start ("Not enough allowed NUMA nodes to bind threads of 2 local CPUWorkers"). So the worker names the
cores itself, from the ones it reserved: the `rollout.num_cpus` cores of its own block of the cores
this process may run on (worker i takes block i, wrapping around when a node holds more workers than
blocks), split evenly over its ranks. Ray's CPU count is bookkeeping and pins nothing; this is the
pinning. A binding the user set is kept.
"""

from __future__ import annotations

import os

ENV = "VLLM_CPU_OMP_THREADS_BIND"


def rank_core_lists(cores: list[int], reserved: int, ranks: int, worker_index: int) -> list[list[int]]:
    """Each rank's cores: block `worker_index` of `reserved` cores out of `cores` (wrapping), split into
    `ranks` parts of at least one core each (ranks share a core when fewer cores than ranks were
    reserved)."""
    if not cores:
        raise ValueError("no core to bind vLLM's threads to")
    per_rank = max(1, reserved // ranks)
    start = worker_index * per_rank * ranks
    return [[cores[(start + r * per_rank + k) % len(cores)] for k in range(per_rank)] for r in range(ranks)]


def bind_value(core_lists: list[list[int]]) -> str:
    """`VLLM_CPU_OMP_THREADS_BIND`'s format: one comma list of core ids per rank, ranks split by `|`."""
    return "|".join(",".join(str(c) for c in cores) for cores in core_lists)


def set_thread_binding(tensor_parallel_size: int, reserved: float, worker_index: int) -> str | None:
    """Set the binding for a CPU worker with tensor parallelism (before its engine starts); returns the
    value set, or None when there is nothing to set (one rank, or the user set it)."""
    if tensor_parallel_size <= 1 or os.environ.get(ENV):
        return None
    cores = sorted(os.sched_getaffinity(0))
    value = bind_value(rank_core_lists(cores, max(1, int(reserved)), tensor_parallel_size, worker_index))
    os.environ[ENV] = value
    return value
