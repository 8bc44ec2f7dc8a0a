"""The learner role: a DeepSpeed ZeRO engine over a PEFT LoRA model (`learner.learner`), the sequence
packing and logprob helpers it shares with the SFT warm-up (`learner.sequences`), and the warm-up.

Deliberately empty of imports: import the submodule you need.
"""
