"""Runtime search with a learned cost model and adaptive sampling (Chameleon-style)."""
