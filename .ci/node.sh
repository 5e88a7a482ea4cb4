#!/bin/bash
# A second (third, ...) libvirt host on this machine, for migration tests.
#
#   bash .ci/node.sh up NAME     starts node NAME; its URI is the last line
#   bash .ci/node.sh down NAME   stops it and removes what it left
#   bash .ci/node.sh uri NAME    prints its URI (whether it runs or not)
#   bash .ci/node.sh restart-libvirtd NAME [SIGNAL]
#                                stops the node's libvirtd (SIGTERM, or
#                                SIGNAL: KILL for a crash), starts it again
#                                in the node's namespace; its guests run on
#                                and the new daemon takes them back
#
# A node is a libvirtd and a virtlogd of their own in their own mount and
# UTS namespace (unshare --mount --uts --propagation private), with private
# /etc/libvirt, /run/libvirt, /var/lib/libvirt, /var/cache/libvirt and
# /var/log/libvirt bound from /var/lib/vmi2libvirt/nodes/NAME/, pid files
# given with -p, a host_uuid of its own (libvirt refuses a migration between
# equal host UUIDs), and migration, display and websocket port ranges of its
# own (a migration's NBD server for a storage copy uses the migration
# range). The system libvirtd is left alone; everything else of the host
# (the image store, the launchers' state folders) is shared, as two nodes
# share a storage network. The node's socket is reached from the host's
# namespace at /var/lib/vmi2libvirt/nodes/NAME/run/libvirt-sock.
#
# Its qemu.conf has cgroup_controllers = [ ] (with the default two daemons
# number their first domains alike and share one cgroup, which the source
# then fails to remove) and dynamic_ownership = 0 (otherwise the source of
# a migration gives the files the target now runs from back to root); QEMU
# runs as root, so files need no owner set beforehand.
#
# Idempotent: up on a running node prints its URI, down on an absent node
# does nothing. Needs root and .ci/prepare-host.sh's packages.
set -euo pipefail
exec </dev/null

nodes=/var/lib/vmi2libvirt/nodes

die() { echo "node.sh: $*" >&2; exit 1; }
usage() { die "usage: node.sh up|down|uri NAME | restart-libvirtd NAME [SIGNAL]"; }

[ $# -eq 2 ] || { [ $# -eq 3 ] && [ "$1" = restart-libvirtd ]; } || usage
cmd="$1"
name="$2"
signal="${3:-TERM}"
[[ "$name" =~ ^[a-z0-9][a-z0-9-]{0,30}$ ]] || die "NAME must be lower-case letters, digits and dashes: $name"
[ "$(id -u)" -eq 0 ] || die "run me as root (I start libvirtd)"

base="$nodes/$name"
sock="$base/run/libvirt-sock"
uri="qemu+unix:///system?socket=$sock"

# alive PIDFILE: the process of the pid file runs.
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# answers: the node's libvirtd answers on its socket.
answers() { [ -S "$sock" ] && virsh -c "$uri" version >/dev/null 2>&1; }

# index: the node's number (1..40), kept in $base/index, the lowest one no
# other node holds. It spaces the nodes' port ranges.
index() {
	if [ -s "$base/index" ]; then
		cat "$base/index"
		return
	fi
	local i taken
	taken="$(cat "$nodes"/*/index 2>/dev/null || true)"
	for i in $(seq 1 40); do
		if ! grep -qx "$i" <<<"$taken"; then
			echo "$i" >"$base/index"
			echo "$i"
			return
		fi
	done
	die "40 nodes exist already"
}

# copy_dirs SRC DST: DST gets SRC's folders with their owners and modes,
# none of their files.
copy_dirs() {
	local src="$1" dst="$2" d m
	# Not the folders of the system daemon's running domains (domain-*):
	# they come and go while this runs.
	(cd "$src" && find . -maxdepth 3 -type d -not -name 'domain-*') | while read -r d; do
		m="$(stat -c '%a %u %g' "$src/$d" 2>/dev/null)" || continue
		read -r mode uid gid <<<"$m"
		install -d -m "$mode" -o "$uid" -g "$gid" "$dst/$d"
	done
}

up() {
	if alive "$base/libvirtd.pid" && answers; then
		echo "$uri"
		return
	fi
	# Half up, or left over from a dead node: start again from nothing.
	down >/dev/null
	mkdir -p "$base"
	chmod 0711 "$nodes" "$base"
	local i
	i="$(index)"

	# /etc/libvirt: the host's configuration, without its networks, pools
	# and domains (their autostart would fight the system daemon's over
	# bridges and ports), with this node's settings.
	# The system daemon's domain files come and go while this copies
	# them (other tests define and undefine domains): cp goes on past a
	# file that vanished, and those files are removed below anyway.
	cp -a /etc/libvirt "$base/etc" 2>/dev/null || true
	[ -s "$base/etc/libvirtd.conf" ] && [ -s "$base/etc/qemu.conf" ] || die "node $name: copying /etc/libvirt failed"
	rm -rf "$base/etc/qemu/networks" "$base/etc/storage" "$base/etc/secrets"/*
	find "$base/etc/qemu" -maxdepth 1 -name '*.xml' -delete
	mkdir -p "$base/etc/qemu/networks/autostart" "$base/etc/storage/autostart"
	cat >>"$base/etc/libvirtd.conf" <<-EOF

		# node.sh: node $name
		host_uuid = "$(cat /proc/sys/kernel/random/uuid)"
	EOF
	local mig=$((49300 + i * 20)) disp=$((6000 + i * 50)) ws=$((8000 + i * 50))
	cat >>"$base/etc/qemu.conf" <<-EOF

		# node.sh: node $name
		user = "root"
		group = "root"
		dynamic_ownership = 0
		cgroup_controllers = [ ]
		security_driver = "none"
		migration_port_min = $mig
		migration_port_max = $((mig + 19))
		remote_display_port_min = $disp
		remote_display_port_max = $((disp + 49))
		remote_websocket_port_min = $ws
		remote_websocket_port_max = $((ws + 49))
	EOF

	# The other private folders: the host's folders (owners and modes)
	# without their contents, but QEMU's capabilities cache (probing QEMU
	# again takes seconds).
	copy_dirs /var/lib/libvirt "$base/lib"
	rm -rf "$base/lib/images"/* "$base/lib/qemu"/{save,snapshot,dump,checkpoint}/* 2>/dev/null || true
	cp -a /var/cache/libvirt "$base/cache"
	copy_dirs /var/log/libvirt "$base/log"
	install -d -m 0755 "$base/run"

	unshare --mount --uts --propagation private -- /bin/bash -euc '
		base="$1" name="$2"
		mount --bind "$base/etc" /etc/libvirt
		mount --bind "$base/run" /run/libvirt
		mount --bind "$base/lib" /var/lib/libvirt
		mount --bind "$base/cache" /var/cache/libvirt
		mount --bind "$base/log" /var/log/libvirt
		hostname "$name"
		virtlogd -d -p "$base/virtlogd.pid"
		libvirtd -d -p "$base/libvirtd.pid"
	' node "$base" "$name"

	local n
	for n in $(seq 1 120); do
		answers && break
		if [ "$n" = 120 ] || { [ "$n" -gt 8 ] && ! alive "$base/libvirtd.pid"; }; then
			tail -n 5 "$base/log/libvirtd.log" >&2 || true
			down >/dev/null 2>&1
			die "node $name: libvirtd does not answer on $uri"
		fi
		sleep 0.25
	done
	echo "node.sh: node $name up (host_uuid $(virsh -c "$uri" capabilities | sed -n 's/.*<uuid>\(.*\)<.uuid>.*/\1/p' | head -1), migration ports $mig-$((mig + 19)))" >&2
	echo "$uri"
}

down() {
	[ -d "$base" ] || return 0
	# Guests before daemons: a killed libvirtd leaves QEMU running.
	if alive "$base/libvirtd.pid" && answers; then
		local d
		for d in $(virsh -c "$uri" list --all --name 2>/dev/null); do
			virsh -c "$uri" destroy "$d" >/dev/null 2>&1 || true
		done
	fi
	# QEMU processes this node started and libvirt did not end.
	local f p
	for f in "$base"/run/qemu/*.pid; do
		[ -s "$f" ] || continue
		p="$(cat "$f")"
		kill -9 "$p" 2>/dev/null || true
	done
	for f in libvirtd virtlogd; do
		if alive "$base/$f.pid"; then
			p="$(cat "$base/$f.pid")"
			kill "$p" 2>/dev/null || true
			for n in $(seq 1 40); do
				kill -0 "$p" 2>/dev/null || break
				sleep 0.25
			done
			kill -9 "$p" 2>/dev/null || true
		fi
	done
	rm -rf "$base"
	echo "node.sh: node $name down" >&2
}

# restart_libvirtd: the node's libvirtd ends (by $signal) and a new one
# starts in the node's namespaces (entered through its virtlogd, which
# lives on), then answers.
restart_libvirtd() {
	alive "$base/virtlogd.pid" || die "node $name is not up"
	local p n
	if alive "$base/libvirtd.pid"; then
		p="$(cat "$base/libvirtd.pid")"
		kill -s "$signal" "$p"
		for n in $(seq 1 80); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.25
		done
		kill -0 "$p" 2>/dev/null && die "node $name: libvirtd $p does not end on SIG$signal"
	fi
	# A killed daemon leaves its pid file and socket behind; the new one
	# takes both over.
	nsenter --target "$(cat "$base/virtlogd.pid")" --mount --uts -- libvirtd -d -p "$base/libvirtd.pid"
	for n in $(seq 1 120); do
		answers && break
		[ "$n" = 120 ] && die "node $name: the restarted libvirtd does not answer on $uri"
		sleep 0.25
	done
	echo "node.sh: node $name: libvirtd restarted (SIG$signal)" >&2
}

case "$cmd" in
up) up ;;
down) down ;;
restart-libvirtd) restart_libvirtd ;;
uri) echo "$uri" ;;
*) usage ;;
esac
