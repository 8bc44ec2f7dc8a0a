"""Calls on a Ray actor answered synchronously, so tests read like plain method calls."""


class Sync:
    """`Sync(actor).method(*args)` is `ray.get(actor.method.remote(*args))`."""

    def __init__(self, actor):
        self.actor = actor

    def __getattr__(self, name):
        import ray

        return lambda *a, **k: ray.get(getattr(self.actor, name).remote(*a, **k))
