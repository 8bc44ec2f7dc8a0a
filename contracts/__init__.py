"""What crosses between roles: the typed messages (`contracts.types`) and LoRA weights in transit
(`contracts.lora`: fingerprint, merge, PEFT files). Every role imports these downward; nothing here
imports a role, a task or Ray.
"""
