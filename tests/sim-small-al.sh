#!/bin/bash
# tests/sim-small-al.sh: tests/sim.sh with the default fault profile (disk
# EIO included) and --small-al: 4 KiB bitmap regions and an activity log
# of 16 extents of 16 KiB, where the default 4 MiB extent would hold the
# whole 1 MiB volume, so that writes evict extents and large trims take
# the path around the set (replication/al_vol.c).  Half of its crashes of
# the Primary are a daemon that exits and starts again at once, before
# the cluster notices, so that the peers resync from its activity log
# (the one resync bounded by the log; otherwise another replica is
# promoted and the crashed one takes a full resync).  SIM_AL_RUNS seeds
# (default 1000) against tests/sim/known-failures-small-al.  Replay a seed
# with
#   tests/sim/replsim --seed N --small-al --trace
SIM_PROFILE=small-al exec bash "$(dirname "$0")/sim.sh"
