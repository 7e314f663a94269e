#!/bin/bash
# tests/sim-inline.sh: tests/sim.sh with the default fault profile (disk
# EIO included) and --inline: where the daemon runs a batch's small writes
# on the loop thread at the batch's end (an idle pool, replication/
# iopool.c), the simulator does so for half of those batches, so that
# completions come in that context too.  SIM_INLINE_RUNS seeds (default
# 2000) against tests/sim/known-failures-inline.  Replay a seed with
#   tests/sim/replsim --seed N --inline --trace
SIM_PROFILE=inline exec bash "$(dirname "$0")/sim.sh"
