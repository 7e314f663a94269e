#!/bin/sh
# pcs-guest.sh: the pcs commands that run a KVM guest on a replicated volume
# of replagentd under Pacemaker so that it fails over when its node dies AND
# live-migrates (pcs resource move): the volume as a plain clone of
# ocf:replagent:volume (its replica up on every node that holds one), the
# guest as ocf:heartbeat:VirtualDomain with allow-migrate, started only
# after the volume and only on a node whose replica is UpToDate.  The guest
# does not need a promotion: with "auto-promote = yes" in replagent.conf,
# the QEMU that attaches makes its replica Primary (refused if another is
# Primary, or the replica is not UpToDate, or the partition has no quorum),
# and during a live migration the Primary role moves with the guest's first
# write on the destination (the libvirt hook opens that window).  It does not
# set up the cluster, fencing, libvirt or the volume.  pcs 0.11, Pacemaker
# 2.1.  (templates/pcs-volume.sh is the other recipe: a promotable clone
# that Pacemaker promotes, a guest that fails over but does not migrate.)
#
# Before: a running cluster with fencing (STONITH) configured and enabled;
# replagentd on every node with "auto-promote = yes" in [global]; the
# libvirt hook installed (/etc/libvirt/hooks/qemu.d/replagent); libvirtd on
# every node reachable from the others for migrations (the default transport
# is ssh, with root's keys; MIGRATION_TRANSPORT=tls or tcp otherwise); the
# agent installed as /usr/lib/ocf/resource.d/replagent/volume; the volume
# made once (replagent volume create vm1 --size 10G --nodes n1,n2,n3) and the
# guest's system on it; its domain XML (templates/domain-vm1.xml, the disk as
# "replagent disk-xml vm1" prints it) at the same path on every node.  Then,
# on any one node (the tests of this project run this very file):
#
#     VOLUME=vm1 GUEST=vm1 GUEST_XML=/etc/libvirt/qemu/vm1.xml sh pcs-guest.sh
#
# Variables:
#   VOLUME       the volume's name (default vm1)
#   GUEST        the libvirt domain and the id of its resource (default VOLUME)
#   DISK         the id of the volume's resource (default VOLUME-disk); the
#                clone is DISK-clone
#   GUEST_XML    its domain XML, the same path on every node
#   REPLICAS     clone-max: how many nodes hold a replica (default 3)
#   MIGRATION_TRANSPORT  virsh's transport to the other node's libvirtd
#                (VirtualDomain's migration_transport; default ssh)
#   REPLAGENT_CLI, REPLAGENT_SOCKET  only if not the defaults ("replagent"
#                in PATH, /run/replagent/control.sock)
#   GUEST_DISABLED=1  create the guest stopped (pcs resource enable later)
set -eu

VOLUME=${VOLUME:-vm1}
GUEST=${GUEST:-$VOLUME}
DISK=${DISK:-$VOLUME-disk}
REPLICAS=${REPLICAS:-3}
CLONE=$DISK-clone

set -- volume="$VOLUME"
[ -n "${REPLAGENT_CLI:-}" ] && set -- "$@" replagent="$REPLAGENT_CLI"
[ -n "${REPLAGENT_SOCKET:-}" ] && set -- "$@" socket="$REPLAGENT_SOCKET"

# The volume: one instance per replica, none promoted (the guest's QEMU
# promotes its own).  The monitor publishes replagent-VOLUME, the score a
# promotion would have: set where the replica is UpToDate, absent where it
# is not (Outdated, Inconsistent, down).
pcs resource create "$DISK" ocf:replagent:volume "$@" \
	op start timeout=60s \
	op stop timeout=100s \
	op monitor interval=10s timeout=20s \
	clone "$CLONE" clone-max="$REPLICAS" clone-node-max=1 notify=true

# The guest: migrate_to runs "virsh migrate --live" to the target node.
set --
[ -n "${GUEST_DISABLED:-}" ] && set -- --disabled
pcs resource create "$GUEST" ocf:heartbeat:VirtualDomain \
	config="${GUEST_XML:?GUEST_XML: the domain XML of $GUEST}" \
	hypervisor=qemu:///system \
	migration_transport="${MIGRATION_TRANSPORT:-ssh}" \
	op start timeout=90s \
	op stop timeout=90s \
	op monitor interval=10s timeout=30s \
	op migrate_to timeout=120s \
	op migrate_from timeout=60s \
	meta allow-migrate=true resource-stickiness=100 "$@"

# After the volume's replica is up, on a node that has one, and never where
# that replica is not UpToDate (it may lack acknowledged writes), unless it
# is partial with no UpToDate replica connected (the attribute is the
# promotion score: ocf-resources/volume).
# shellcheck disable=SC1010 # "then" is a word of pcs here
pcs constraint order start "$CLONE" then start "$GUEST"
pcs constraint colocation add "$GUEST" with "$CLONE" INFINITY
pcs constraint location "$GUEST" rule score=-INFINITY \
	not_defined "replagent-$VOLUME" or "replagent-$VOLUME" lt integer 1
