#!/bin/bash
# tests/sim-full-disk.sh: tests/sim.sh with the EIO profile and
# --full-disk: half of its disk faults are a full file system instead,
# whose backing refuses every write with ENOSPC for a while (nothing torn,
# the metadata's space allocated).  Beyond the usual invariants, the disk
# may be sent only so many writes while full (a resync once sent the same
# regions again as fast as they failed: tests/repl-disk-full.sh).
# SIM_FULL_RUNS seeds (default 2000) against
# tests/sim/known-failures-full-disk.  Replay a seed with
#   tests/sim/replsim --seed N --full-disk --trace
SIM_PROFILE=full-disk exec bash "$(dirname "$0")/sim.sh"
