"""Placing roles on a Ray cluster: placement groups, actor groups, connecting to Ray."""
