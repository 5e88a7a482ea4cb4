#!/bin/bash
# Prepares a Debian 12 machine (root, Go and gcc only) for vmi2libvirt's
# tests and examples: installs the packages of .ci/host-packages, gives
# /dev/kvm the group and mode Debian's udev rule gives it, starts virtlogd
# and libvirtd without systemd when they are not running, extracts Debian's
# cloud and generic kernels and its signed shim and GRUB, and builds the
# test guest as an OCI image and its bootable images as containerDisk
# images, and imports them into the default image store (as an air-gapped
# host imports an image).
# Idempotent; reads no standard input; prints each step with its time.
# Run from anywhere in the repository.
set -euo pipefail
exec </dev/null

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kernel_dir=/var/cache/vmi2libvirt/kernel                 # testguest.DefaultKernelTree
generic_kernel_dir=/var/cache/vmi2libvirt/kernel-generic # testguest.DefaultGenericKernelTree
signed_boot_dir=/var/cache/vmi2libvirt/signed-boot       # testguest.DefaultSignedBootTree
image_store=/var/lib/vmi2libvirt/images # convert.DefaultImageStore
state_dir=/var/lib/vmi2libvirt/vmis # convert.DefaultStateDir
uri=qemu:///system
qemu_user=libvirt-qemu # the user Debian's libvirt runs QEMU as

start=$SECONDS
log() { echo "prepare-host: $* ($((SECONDS - start))s)"; }
die() { echo "prepare-host: $*" >&2; exit 1; }

if [ "$(id -u)" -ne 0 ]; then
	die "run me as root (I install packages and start libvirtd)"
fi
# Go from the official tarball lives here; a login shell may not have it.
if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then
	export PATH="/usr/local/go/bin:$PATH"
fi

# Packages: the one list, .ci/host-packages.
export DEBIAN_FRONTEND=noninteractive
mapfile -t packages < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$repo/.ci/host-packages" | awk '{print $1}')
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	log "installing ${missing[*]}"
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
log "packages: all ${#packages[@]} of .ci/host-packages installed"

# /dev/kvm. Without udev (a container, a CI runner, a minimal VM) it stays
# root:root 0600; libvirt's QEMU, running as $qemu_user, cannot open it,
# and libvirt then throws its QEMU capabilities away and re-probes QEMU on
# every call (seconds each). Debian's udev rule makes it root:kvm 0660, and
# libvirt-daemon-system puts $qemu_user into the kvm group: do the same.
if [ -c /dev/kvm ]; then
	owner="$(stat -c '%U:%G %a' /dev/kvm)"
	if [ "$(stat -c %G /dev/kvm)" != kvm ] || [ "$(( 0$(stat -c %a /dev/kvm) & 060 ))" -ne $(( 060 )) ]; then
		getent group kvm >/dev/null || groupadd --system kvm
		chgrp kvm /dev/kvm
		chmod 0660 /dev/kvm
		log "/dev/kvm was $owner; now root:kvm 660, as Debian's udev rule makes it"
	fi
	if id "$qemu_user" >/dev/null 2>&1 && ! id -nG "$qemu_user" | grep -qw kvm; then
		usermod -aG kvm "$qemu_user"
		log "added $qemu_user to the kvm group"
	fi
	if ! runuser -u "$qemu_user" -- test -r /dev/kvm -a -w /dev/kvm; then
		die "$qemu_user cannot open /dev/kvm ($(stat -c '%U:%G %a' /dev/kvm)); libvirt would re-probe QEMU on every call"
	fi
	log "/dev/kvm: $(stat -c '%U:%G %a' /dev/kvm), $qemu_user can open it"
else
	log "/dev/kvm: none (guests run under emulation)"
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
	[ "$i" = 60 ] && die "libvirtd does not answer on $uri"
	sleep 0.5
done
log "libvirt answers: $(virsh -c "$uri" version 2>/dev/null | grep -i 'running hypervisor' || true)"

# extract DIR PACKAGE...: downloads the packages (a meta package stands for
# the versioned kernel it depends on) and extracts them all into DIR, in
# place of what DIR held. DIR/.packages lists what was extracted, so a
# change of the list extracts again (a DIR without it, from before the
# list was kept, is kept). Extracted, never installed: nothing of the
# host's own kernel or boot loader is touched.
extract() {
	local dir="$1"
	shift
	if [ -f "$dir/.packages" ] && [ "$(cat "$dir/.packages")" = "$*" ]; then
		return
	fi
	if [ -d "$dir" ] && [ ! -f "$dir/.packages" ]; then
		return
	fi
	local want=() p versioned
	for p in "$@"; do
		case "$p" in
		linux-image-*amd64)
			apt-cache show "$p" >/dev/null 2>&1 || apt-get update -qq
			versioned="$(apt-cache depends "$p" | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')"
			[ -n "$versioned" ] || die "cannot resolve the package $p depends on"
			want+=("$p" "$versioned")
			;;
		*) want+=("$p") ;;
		esac
	done
	log "fetching ${want[*]} into $dir"
	local dl
	dl="$(mktemp -d)"
	chmod 755 "$dl" # apt's _apt user downloads into it
	(cd "$dl" && apt-get download -qq -o APT::Sandbox::User=root "${want[@]}")
	rm -rf "$dir.tmp"
	mkdir -p "$dir.tmp"
	for deb in "$dl"/*.deb; do
		dpkg-deb -x "$deb" "$dir.tmp"
	done
	rm -rf "$dl"
	echo "$*" >"$dir.tmp/.packages"
	rm -rf "$dir"
	mv "$dir.tmp" "$dir"
}

# Debian's cloud kernel: the kernel-boot test guest (it boots fastest).
extract "$kernel_dir" linux-image-cloud-amd64
log "kernel $(ls "$kernel_dir"/boot/vmlinuz-*)"
# Debian's generic kernel, signed, with signed modules: the bootable test
# images (the cloud kernel has no AHCI, e1000e or USB storage driver).
extract "$generic_kernel_dir" linux-image-amd64
log "generic kernel $(ls "$generic_kernel_dir"/boot/vmlinuz-*)"
# Debian's signed shim and GRUB for the secure-boot test image; their
# packages' maintainer scripts would install them on the host's own ESP.
extract "$signed_boot_dir" shim-signed grub-efi-amd64-signed
log "signed boot loaders $(ls "$signed_boot_dir"/usr/lib/shim/shimx64.efi.signed "$signed_boot_dir"/usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed | tr '\n' ' ')"

# Folders the launcher uses by default: QEMU ($qemu_user) must be able to
# walk into them to reach the files libvirt chowns for it.
mkdir -p "$image_store" "$state_dir"
chmod 0711 /var/lib/vmi2libvirt "$state_dir"
chmod 0755 "$image_store"

log "building the test guest images and importing them into $image_store"
(cd "$repo" && go run ./testkit/testguest/cmd/testguest -store "$image_store" -kernel "$kernel_dir" -boot-images)
log "done"
