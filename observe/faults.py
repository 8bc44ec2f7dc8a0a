"""The faults a run survived, per role, and what they cost: read from its events.

A failed role is a `recovery` event when it is noticed and a `recovered` event once its replacement
serves (with the seconds that took and the steps the run must make again: a rebuilt learner group or a
restarted coordinator goes back to the newest checkpoint). A run resumed by hand (`--resume`, after
a killed or stopped driver) is a `resume` event that no restarted coordinator explains. The run's end
table and its report show the same summary.

>>> events = [{"event": "recovery", "role": "learner"}, {"event": "recovered", "role": "learner",
...           "seconds": 4.5, "redone": 1}, {"event": "recovery", "role": "rollout"}]
>>> [(f.role, f.faults, f.seconds, f.redone) for f in fault_summary(events)]
[('rollout', 1, 0.0, 0), ('learner', 1, 4.5, 1)]
>>> print(format_faults(fault_summary(events)))
faults survived: rollout 1 (0.0 s to recover), learner 1 (4.5 s to recover, 1 step redone)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

ROLES = ("rollout", "learner", "reward", "coordinator")


@dataclass
class Faults:
    role: str
    faults: int = 0
    seconds: float = 0.0  # from noticing the failure to the replacement serving
    redone: int = 0  # steps made again after going back to a checkpoint


def fault_summary(events: Iterable[dict]) -> list[Faults]:
    """One entry per role that failed at least once (roles in a fixed order), then `resumed` for runs
    resumed by hand."""
    by_role = {r: Faults(r) for r in ROLES}
    resumes = restarted = 0
    for e in events:
        kind, role = e.get("event"), e.get("role")
        if kind == "recovery" and role:
            by_role.setdefault(role, Faults(role)).faults += 1
            restarted += role == "coordinator"
        elif kind == "recovered" and role:
            f = by_role.setdefault(role, Faults(role))
            f.seconds += float(e.get("seconds") or 0.0)
            f.redone += int(e.get("redone") or 0)
        elif kind == "resume":
            resumes += 1
    out = [f for f in by_role.values() if f.faults]
    if resumes > restarted:  # every restarted coordinator resumes from a checkpoint too
        out.append(Faults("resumed", resumes - restarted))
    return out


def format_faults(summary: list[Faults]) -> str:
    """One line for the end of a run."""
    if not summary:
        return "faults survived: none"
    parts = []
    for f in summary:
        if f.role == "resumed":
            parts.append(f"resumed by hand {f.faults}")
            continue
        redone = f", {f.redone} step{'s' * (f.redone != 1)} redone" if f.redone else ""
        parts.append(f"{f.role} {f.faults} ({f.seconds:.1f} s to recover{redone})")
    return "faults survived: " + ", ".join(parts)


def faults_markdown(summary: list[Faults]) -> list[str]:
    """The report's table (or a line saying there was nothing)."""
    if not summary:
        return ["No faults: no role was replaced and the run was not resumed."]
    out = ["| role | faults survived | seconds to recover | steps redone |", "|---|---|---|---|"]
    for f in summary:
        if f.role == "resumed":
            out.append(f"| resumed by hand | {f.faults} | — | — |")
        else:
            out.append(f"| {f.role} | {f.faults} | {f.seconds:.1f} | {f.redone} |")
    return out


def learning_line(events: Iterable[dict]) -> str | None:
    """What kept the run from learning, in one line (None when every step updated the policy and no
    reward failed): failed rewards and steps without an update."""
    failed_steps: set = set()
    failures = 0
    idle: list[dict] = []
    for e in events:
        if e.get("event") == "reward_failure":
            failures += 1
            failed_steps.add(e.get("step"))
        elif e.get("event") == "no_update":
            idle.append(e)
    parts = []
    if failures:
        parts.append(f"{failures} reward failure{'s' * (failures != 1)} in {len(failed_steps)} "
                     f"step{'s' * (len(failed_steps) != 1)}")
    if idle:
        parts.append(f"{len(idle)} step{'s' * (len(idle) != 1)} without an update "
                     f"(the last, step {idle[-1].get('step')}: {idle[-1].get('reason')})")
    return "learning: " + "; ".join(parts) if parts else None
