# setup.sh: sourced by tests/run-all.sh and demo.sh: installs the Debian 12
# packages the project builds and tests with, and builds a tree.
# shellcheck shell=bash

REPLAGENT_PACKAGES="build-essential autoconf automake libtool pkg-config
  libssl-dev libipsec-mb-dev libgnutls28-dev gnutls-bin libqb-dev libcpg-dev libquorum-dev libcmap-dev libcorosync-common-dev
  libvirt-dev libxml2-dev corosync pacemaker pacemaker-cli-utils pcs
  libvirt-daemon-system libvirt-clients qemu-system-x86 qemu-utils
  nbdkit libnbd-bin python3-libnbd fio nasm shellcheck iproute2 xxd
  libqb-tools libxml2-utils resource-agents clang libclang-rt-14-dev
  libmicrohttpd-dev prometheus"

setup_log() { printf '=== %s\n' "$*"; }

# Installs what is missing (apt-get, as root); SKIP_APT=1 skips it.
setup_packages() {
	[ "${SKIP_APT:-0}" = 1 ] && return 0
	# shellcheck disable=SC2086
	dpkg -s $REPLAGENT_PACKAGES >/dev/null 2>&1 && return 0
	setup_log "installing packages (apt-get)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq || return 1
	# shellcheck disable=SC2086
	apt-get install -y -qq $REPLAGENT_PACKAGES >/dev/null
}

# setup_build TOP DIR CONFIGURE-ARGS...: autogen (once) and a VPATH build.
setup_build() {
	local top=$1 dir=$2
	shift 2
	[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh >/dev/null 2>&1) || return 1
	setup_log "building in $dir ${*:-}"
	mkdir -p "$dir"
	(cd "$dir" && "$top/configure" --enable-fatal-warnings "$@" >configure.out 2>&1 &&
		make -j"$(nproc)" >make.out 2>&1) || {
		tail -50 "$dir/make.out" "$dir/configure.out" 2>/dev/null
		return 1
	}
}
