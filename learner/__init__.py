"""The learner: advantages, losses, the NGRPO switch, difficulty filtering and token weights.

Deliberately empty of imports: the pure algorithm modules (`learner.advantages`, `learner.losses`, ...)
must import without pulling in DeepSpeed, PEFT or Ray, so import the submodule you need.
"""
