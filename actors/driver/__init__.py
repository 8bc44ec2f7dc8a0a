"""The driver's side: the coordinator's step loop and what it owns (pipelines, checkpoints, roles).

Runs in the coordinator's process. It may use the worker's and the reward side's types, never the other
way round: a rollout worker or reward actor knows nothing of the loop that calls it.
"""
