"""The rollout worker's side: its vLLM engine, sampling, the sample stream and agent episodes.

Runs in each rollout worker's process; imports nothing of the driver's side.
"""
