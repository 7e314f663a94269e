#!/bin/bash
# tests/sim-split-brain.sh: tests/sim.sh with the simulator's split-brain
# profile (tests/sim/split.c: two replicas in static mode, partitions, an
# operator who promotes the cut-off Secondary and later resolves the split
# brain with "replagent resolve --keep") over SIM_SB_RUNS seeds (default
# 600) against tests/sim/known-failures-split-brain.  Replay a seed with
#   tests/sim/replsim --split-brain --seed N --trace
SIM_PROFILE=split-brain exec bash "$(dirname "$0")/sim.sh"
