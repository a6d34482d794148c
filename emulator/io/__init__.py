"""The I/O level's real runs: one experiment's apps through the arbiter actors."""
