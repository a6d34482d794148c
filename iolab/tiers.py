"""The two storage tiers' names, as specs, policies and traces write them."""

LPS = "lps"  # the slow, unlimited tier (the parallel file system)
HPS = "hps"  # the fast tier of limited capacity (burst buffers, node-local disks)
TIERS = (LPS, HPS)
