"""Tasks an agent can be trained on. Each task ships its tools, data generator and labels."""
