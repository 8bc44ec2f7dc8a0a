"""The reward side: reward actors, and the pool that spreads a batch's scoring over them."""
