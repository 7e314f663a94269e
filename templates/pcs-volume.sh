#!/bin/sh
# pcs-volume.sh: the pcs commands that put a replicated volume of replagentd
# under Pacemaker, as a promotable clone of ocf:replagent:volume, and,
# optionally, the KVM guest that uses it, started only where the volume is
# Promoted (Primary) and only after the promotion.  It does not set up the
# cluster, fencing or the volume itself.  pcs 0.11, Pacemaker 2.1.
#
# Before: a running cluster with fencing (STONITH) configured and enabled:
# an Outdated replica is never promoted, but a node that cannot be fenced
# is not known to be gone; replagentd running on every node; the agent
# installed as /usr/lib/ocf/resource.d/replagent/volume; and the volume
# made once, on any node:
#
#     replagent volume create vol0 --size 10G --nodes n1,n2,n3
#
# Then, on any one node (the tests of this project run this very file):
#
#     VOLUME=vol0 sh pcs-volume.sh
#     VOLUME=vol0 GUEST=vm1 GUEST_XML=/etc/libvirt/qemu/vm1.xml sh pcs-volume.sh
#
# Variables:
#   VOLUME       the volume's name; also the id of the resource (default vol0);
#                the clone is VOLUME-clone
#   REPLICAS     clone-max: how many nodes hold a replica (default 3)
#   REPLAGENT_CLI, REPLAGENT_SOCKET  only if not the defaults ("replagent"
#                in PATH, /run/replagent/control.sock)
#   GUEST        the libvirt domain (and resource id) to run on the volume,
#   GUEST_XML    its domain XML, the same path on every node
#   GUEST_DISABLED=1  create the guest stopped (pcs resource enable later)
#   NOTIFY       true (default) or false: clone notifications (see below)
set -eu

VOLUME=${VOLUME:-vol0}
REPLICAS=${REPLICAS:-3}
CLONE=$VOLUME-clone

set -- volume="$VOLUME"
[ -n "${REPLAGENT_CLI:-}" ] && set -- "$@" replagent="$REPLAGENT_CLI"
[ -n "${REPLAGENT_SOCKET:-}" ] && set -- "$@" socket="$REPLAGENT_SOCKET"

# The volume: one instance per replica, one of them Promoted.  Two monitors
# with different intervals (one per role, as Pacemaker requires); the
# timeouts are the agent's defaults.  The promoted instance stays where it
# is (the agent gives the Primary the highest promotion score, stickiness
# does the rest): a node that comes back resyncs as Unpromoted and does not
# take the volume back by itself.
# Notifications (notify=true) let each instance refresh its promotion
# score at once when a peer starts, stops or changes role.  They cost a
# failover time: after the fencing Pacemaker first runs the dead
# instance's demote notifications on every survivor, one after the other,
# whose score update aborts that transition; then pre-promote
# notifications, the promote, post-promote ones.  That is 3-4 s of the
# failover on a loaded 2-core test cluster (bench/failover-bench.sh).
# NOTIFY=false promotes straight after the fencing; the trade-off: the
# scores are refreshed by the monitors only (every 10-11 s), so for that
# long after a peer changes, Pacemaker may prefer a replica that is no
# longer the best (replagentd still refuses to promote an Outdated or
# Inconsistent one, so the choice can be slower, never unsafe).
pcs resource create "$VOLUME" ocf:replagent:volume "$@" \
	op start timeout=60s \
	op stop timeout=100s \
	op promote timeout=90s \
	op demote timeout=90s \
	op notify timeout=20s \
	op monitor interval=10s timeout=20s role=Promoted \
	op monitor interval=11s timeout=20s role=Unpromoted \
	meta resource-stickiness=100 \
	promotable "$CLONE" promoted-max=1 promoted-node-max=1 \
	clone-max="$REPLICAS" clone-node-max=1 notify="${NOTIFY:-true}"

[ -n "${GUEST:-}" ] || exit 0

# The guest: started after the volume is promoted, on the same node, and
# stopped before it is demoted (the order is symmetrical), so that demote
# never meets a QEMU still attached.  No live migration here: that opens a
# two-writer window that needs its own agent support.
set --
[ -n "${GUEST_DISABLED:-}" ] && set -- --disabled
pcs resource create "$GUEST" ocf:heartbeat:VirtualDomain \
	config="${GUEST_XML:?GUEST_XML: the domain XML of $GUEST}" \
	hypervisor=qemu:///system \
	op start timeout=90s \
	op stop timeout=90s \
	op monitor interval=10s timeout=30s \
	meta allow-migrate=false "$@"
# shellcheck disable=SC1010 # "then" is a word of pcs here
pcs constraint order promote "$CLONE" then start "$GUEST"
pcs constraint colocation add "$GUEST" with Promoted "$CLONE" INFINITY
