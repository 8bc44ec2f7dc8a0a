"""The algorithm, as pure functions over tensors and lists: no Ray, no I/O, no tokenizer, no model.

- advantages: group-relative advantages (GRPO, NGRPO, Dr.GRPO) and zero-std statistics
- losses: the clipped token-level policy loss with an optional k3 KL term
- shaping: overlong reward shaping
- ngrpo_switch: the dynamic NGRPO switch (moving window, hysteresis)
- difficulty: the easy / medium / hard difficulty filter
- token_weights: DART-style per-token weights from character spans
- schedule: learning-rate schedules
- sampling: adaptive prompt sampling weights
- step: one batch's rewards → advantages, token weights, metrics and the switch event

docs/algorithm.md explains each piece. Import the submodule you need.
"""
