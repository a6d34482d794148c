"""The batch level's real runs: a queue of jobs started as real processes."""
