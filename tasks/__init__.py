"""Tasks an agent can be trained on. `tasks.base` defines what the runtime needs from one (`Task`) and
finds a task by name; each task package (`tasks/fund_assistant/`) ships its tools, data, labels and
rewards and implements the interface."""
