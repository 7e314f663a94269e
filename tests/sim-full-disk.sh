#!/bin/bash
# tests/sim-full-disk.sh: tests/sim.sh with the EIO profile and
# --full-disk --bad-sectors: half of its disk faults are a full file
# system instead, whose backing refuses every write with ENOSPC for a while
# (nothing torn, the metadata's space allocated), and a quarter a range of
# the backing that cannot be read for a while (EIO; half the time an
# operator starts a verify there).  Beyond the usual invariants, a full
# disk may be sent, and unreadable sectors read, only so many times while
# the fault lasts (a resync once wrote the same regions again as fast as
# they failed, tests/repl-disk-full.sh, and a verify read the same region
# again forever, tests/repl-verify-eio.sh).  SIM_FULL_RUNS seeds (default
# 2000) against tests/sim/known-failures-full-disk.  Replay a seed with
#   tests/sim/replsim --seed N --full-disk --bad-sectors --trace
SIM_PROFILE=full-disk exec bash "$(dirname "$0")/sim.sh"
