"""Ray roles: rollout workers, the reward pool and the coordinator (classes import without Ray actors
being started; `ray.remote(**options)(cls)` is applied only where they are wired up)."""
