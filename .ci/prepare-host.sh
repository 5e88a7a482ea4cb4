#!/bin/bash
# Prepares a Debian 12 machine (root, Go and gcc only) for vmi2libvirt's
# tests: installs libvirt, QEMU and tools, starts virtlogd and libvirtd
# without systemd when they are not running, extracts Debian's cloud kernel
# and builds the test guest into the default image store.
# Idempotent; reads no standard input. Run from anywhere in the repository.
set -euo pipefail
exec </dev/null

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kernel_dir=/var/cache/vmi2libvirt/kernel
image_store=/var/lib/vmi2libvirt/images
state_dir=/var/lib/vmi2libvirt/vmis # launcher.DefaultStateDir
uri=qemu:///system

log() { echo "prepare-host: $*"; }

export DEBIAN_FRONTEND=noninteractive
packages=(
	libvirt-dev libvirt-daemon-system libvirt-clients
	qemu-system-x86 qemu-utils ovmf busybox-static
	genisoimage # isoinfo, used by internal/iso's tests
	util-linux  # blkid
	procps      # pgrep
)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	log "installing ${missing[*]}"
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# virtlogd and libvirtd, without systemd.
if ! pgrep -x virtlogd >/dev/null; then
	log "starting virtlogd"
	virtlogd -d
fi
if ! pgrep -x libvirtd >/dev/null; then
	log "starting libvirtd"
	libvirtd -d
fi
for i in $(seq 1 60); do
	virsh -c "$uri" version >/dev/null 2>&1 && break
	[ "$i" = 60 ] && { echo "prepare-host: libvirtd does not answer on $uri" >&2; exit 1; }
	sleep 0.5
done
log "libvirt answers: $(virsh -c "$uri" version 2>/dev/null | grep -i 'running hypervisor' || true)"

# Debian's cloud kernel: the meta package names the versioned one.
if ! ls "$kernel_dir"/boot/vmlinuz-* >/dev/null 2>&1 || ! ls -d "$kernel_dir"/lib/modules/*/kernel >/dev/null 2>&1; then
	apt-cache show linux-image-cloud-amd64 >/dev/null 2>&1 || apt-get update -qq
	versioned="$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')"
	[ -n "$versioned" ] || { echo "prepare-host: cannot resolve the package linux-image-cloud-amd64 depends on" >&2; exit 1; }
	log "fetching $versioned"
	dl="$(mktemp -d)"
	trap 'rm -rf "$dl"' EXIT
	chmod 755 "$dl" # apt's _apt user downloads into it
	(cd "$dl" && apt-get download -qq -o APT::Sandbox::User=root linux-image-cloud-amd64 "$versioned")
	tmp="$kernel_dir.tmp"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	dpkg-deb -x "$dl/${versioned}"_*.deb "$tmp"
	rm -rf "$kernel_dir"
	mkdir -p "$(dirname "$kernel_dir")"
	mv "$tmp" "$kernel_dir"
fi
log "kernel $(ls "$kernel_dir"/boot/vmlinuz-*)"

# Folders the launcher uses by default: QEMU (libvirt-qemu) must be able to
# walk into them to reach the files libvirt chowns for it.
mkdir -p "$image_store" "$state_dir"
chmod 0711 /var/lib/vmi2libvirt "$state_dir"
chmod 0755 "$image_store"

log "building the test guest into $image_store"
(cd "$repo" && go run ./internal/testguest/cmd/testguest -store "$image_store" -kernel "$kernel_dir")
log "done"
