#!/bin/bash
# tests/sim-eio.sh: tests/sim.sh with the simulator's default fault
# profile, disk EIO included (writes and flushes of a node's backing and
# metadata fail at a seeded rate), over SIM_EIO_RUNS seeds (default 4000)
# against tests/sim/known-failures-eio.  Replay a seed with
#   tests/sim/replsim --seed N --trace
SIM_PROFILE=eio exec bash "$(dirname "$0")/sim.sh"
