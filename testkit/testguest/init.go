package testguest

// Markers framing the report the guest prints on its serial console.
const (
	BeginMarker = "=== TESTGUEST REPORT BEGIN ==="
	EndMarker   = "=== TESTGUEST REPORT END ==="
)

// Kernel arguments that select what the guest does after its report.
const (
	// ActionPowerOff powers the guest off at once.
	ActionPowerOff = "testguest.action=poweroff"
	// ActionACPI waits and powers off when the ACPI power button is pressed.
	ActionACPI = "testguest.action=acpi"
	// ActionIgnore waits forever and ignores the ACPI power button.
	ActionIgnore = "testguest.action=ignore"
)

// BigFile is the size over which the report names a file of an ISO9660
// disk, with its size, instead of printing it (a boot image's kernel).
const BigFile = 64 << 10

// ShellMarker is the line the guest prints, once it waits (actions acpi
// and ignore), before it starts a shell on its serial console: a busybox
// sh, prompt "/ # ", that runs what is typed there.
const ShellMarker = "testguest: a shell on the console"

// VirtiofsArg is the kernel argument that asks the guest to mount virtiofs
// file systems by their tags (the names of the VMI's filesystems) and
// report their files: testguest.virtiofs=TAG[,TAG...].
const VirtiofsArg = "testguest.virtiofs"

// MetricsArg is the kernel argument that asks the guest to read the
// downward metrics channel (virtio port org.github.vhostmd.1) once.
const MetricsArg = "testguest.metrics"

// KernelArgs are the kernel arguments a VMI booting the test guest gives
// (spec.domain.firmware.kernelBoot.kernelArgs), with one of the actions.
const KernelArgs = "console=ttyS0 quiet"

// initScript is the guest's /init, run by busybox's shell. It prints the
// report between the markers: "cpus N", "memtotal_kib N", one
// "disk NAME serial=S size=BYTES" per block device, one "nic NAME mac=M"
// per network interface, and for every ISO9660 device
// "iso NAME label=L" followed, for each file on it, by "file PATH", its
// contents as "b64 ..." lines, and "endfile" (a file over BigFile bytes is
// one line "bigfile SIZE PATH" instead). Lines added later, which a
// reader of the first format ignores: "firmware efi|bios",
// "secureboot enabled|disabled|unknown" (EFI only, as the kernel saw it),
// "lockdown MODE", "cmdline ...", "bootid ID" (the kernel's random boot
// ID, one per boot), one "diskbus NAME bus=B type=disk|cdrom"
// per disk, one "nicdriver NAME driver=D" per NIC,
// "device KIND DETAIL..." lines for the other devices the kernel bound,
// and for each virtiofs tag of the kernel argument VirtiofsArg
// "share TAG" followed by its files as an ISO's (or "share TAG failed"
// when it does not mount); with the kernel argument MetricsArg, for the
// downward metrics port, "metrics PORT", the document it answers to one
// request as "b64 ..." lines, and "endmetrics".
// Then it acts on its action; while it waits, a shell runs on the console
// (see ShellMarker).
const initScript = `#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /mnt /tmp
/bin/busybox mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
dmesg -n 1
while read -r mod args; do
	insmod "/lib/modules/$mod" $args || echo "testguest: insmod $mod failed"
done < /etc/modules.load

action=poweroff
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	testguest.action=*) action="${arg#testguest.action=}" ;;
	esac
done

# With testguest.action=acpi, busybox acpid runs /etc/acpi/PWRF/00000080
# on the power button. It starts before the report and the report waits
# until it has the input devices open, so that no press after the
# "waiting" line is lost.
if [ "$action" = acpi ]; then
	mkdir -p /etc/acpi/PWRF
	printf '#!/bin/sh\necho "testguest: power button" >/dev/console\nsync\npoweroff -f\n' > /etc/acpi/PWRF/00000080
	chmod 755 /etc/acpi/PWRF/00000080
	acpid -d -c /etc/acpi >/dev/null 2>&1 &
	pid=$!
	for i in $(seq 1 50); do
		ls -l /proc/$pid/fd 2>/dev/null | grep -q /dev/input/event && break
		sleep 0.1
	done
fi

# Block devices show up while their drivers probe; wait until the list
# stops changing (SCSI is scanned synchronously, virtio and SATA probe at
# insmod). USB devices are enumerated in the background: with a USB bus,
# the list of USB devices must stand still too, for longer.
prev=""
stable=0
need=1
[ -e /sys/bus/usb/devices/usb1 ] && need=3
for i in $(seq 1 30); do
	cur="$(ls /sys/block /sys/bus/usb/devices 2>/dev/null)"
	if [ "$cur" = "$prev" ]; then
		stable=$((stable + 1))
		[ "$stable" -ge "$need" ] && break
	else
		stable=0
	fi
	prev="$cur"
	sleep 0.2
done

report() {
	echo "cpus $(grep -c '^processor' /proc/cpuinfo)"
	echo "memtotal_kib $(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
	for d in /sys/block/*; do
		[ -e "$d/device" ] || continue
		name="${d##*/}"
		serial=""
		if [ -r "$d/serial" ]; then
			serial="$(cat "$d/serial")"
		elif [ -r "$d/device/vpd_pg80" ]; then
			# SCSI: the unit serial number VPD page, after its 4-byte header.
			serial="$(dd if="$d/device/vpd_pg80" bs=1 skip=4 2>/dev/null | tr -d '\000' | sed 's/^ *//; s/ *$//')"
		fi
		if [ -z "$serial" ]; then
			# USB storage: the serial number of the USB device above it.
			p="$(readlink -f "$d/device")"
			while [ "${p#/sys/}" != "$p" ]; do
				if [ -r "$p/idVendor" ]; then
					[ -r "$p/serial" ] && serial="$(cat "$p/serial")"
					break
				fi
				p="${p%/*}"
			done
		fi
		size=$(( $(cat "$d/size") * 512 ))
		echo "disk $name serial=$serial size=$size"
	done
	for n in /sys/class/net/*; do
		name="${n##*/}"
		[ "$name" = lo ] && continue
		echo "nic $name mac=$(cat "$n/address")"
	done
	if [ -d /sys/firmware/efi ]; then
		echo "firmware efi"
		if dmesg | grep -q 'Secure boot enabled'; then
			echo "secureboot enabled"
		elif dmesg | grep -q 'Secure boot disabled'; then
			echo "secureboot disabled"
		else
			echo "secureboot unknown"
		fi
	else
		echo "firmware bios"
	fi
	mkdir -p /sys/kernel/security
	mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
	if [ -r /sys/kernel/security/lockdown ]; then
		echo "lockdown $(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/security/lockdown)"
	fi
	echo "cmdline $(cat /proc/cmdline)"
	echo "bootid $(cat /proc/sys/kernel/random/boot_id)"
	for d in /sys/block/*; do
		[ -e "$d/device" ] || continue
		case "$(readlink -f "$d/device")" in
		*/usb[0-9]*) bus=usb ;;
		*/ata[0-9]*) bus=sata ;;
		*/virtio[0-9]*/host[0-9]*) bus=scsi ;;
		*/virtio[0-9]*) bus=virtio ;;
		*) bus=other ;;
		esac
		type=disk
		[ "$(cat "$d/device/type" 2>/dev/null)" = 5 ] && type=cdrom
		echo "diskbus ${d##*/} bus=$bus type=$type"
	done
	for n in /sys/class/net/*; do
		[ -e "$n/device/driver" ] || continue
		echo "nicdriver ${n##*/} driver=$(basename "$(readlink -f "$n/device/driver")")"
	done
	for v in /sys/bus/virtio/devices/*; do
		[ -e "$v/driver" ] && echo "device virtio $(basename "$(readlink -f "$v/driver")")"
	done
	for w in /sys/class/watchdog/*; do
		[ -r "$w/identity" ] && echo "device watchdog $(cat "$w/identity")"
	done
	if [ -r /sys/class/misc/hw_random/rng_current ] && [ "$(cat /sys/class/misc/hw_random/rng_current)" != none ]; then
		echo "device rng $(cat /sys/class/misc/hw_random/rng_current)"
	fi
	for t in /sys/class/tpm/tpm*; do
		[ -e "$t" ] && echo "device tpm ${t##*/} version $(cat "$t/tpm_version_major" 2>/dev/null)"
	done
	# Sound cards by their PCI class (audio 0x0401, HD audio 0x0403):
	# the driver binds at once, the codecs are probed in the background.
	for p in /sys/bus/pci/devices/*; do
		case "$(cat "$p/class")" in
		0x0401* | 0x0403*) [ -e "$p/driver" ] && echo "device sound $(basename "$(readlink -f "$p/driver")")" ;;
		esac
	done
	sed -n 's/^N: Name="\(.*\)"$/device input \1/p' /proc/bus/input/devices 2>/dev/null
	sed -n 's/^\([0-9]*\): uart:\([^ ]*\) .*/\1 \2/p' /proc/tty/driver/serial 2>/dev/null | while read -r line uart; do
		[ "$uart" = unknown ] || echo "device serial ttyS$line $uart"
	done
	for d in /sys/block/*; do
		[ -e "$d/device" ] || continue
		name="${d##*/}"
		mkdir -p "/mnt/$name"
		mount -t iso9660 -o ro "/dev/$name" "/mnt/$name" 2>/dev/null || continue
		label="$(dd if="/dev/$name" bs=1 skip=32808 count=32 2>/dev/null | sed 's/ *$//')"
		echo "iso $name label=$label"
		files "/mnt/$name"
		umount "/mnt/$name"
	done
	for tag in $(sed -n 's/.*testguest\.virtiofs=\([^ ]*\).*/\1/p' /proc/cmdline | tr ',' ' '); do
		mkdir -p "/mnt/virtiofs-$tag"
		if mount -t virtiofs "$tag" "/mnt/virtiofs-$tag" 2>/dev/null; then
			echo "share $tag"
			files "/mnt/virtiofs-$tag"
			umount "/mnt/virtiofs-$tag"
		else
			echo "share $tag failed"
		fi
	done
	# The downward metrics channel, when asked: one request, its answer
	# up to the blank line that ends it.
	if grep -q 'testguest\.metrics' /proc/cmdline; then
		for p in /sys/class/virtio-ports/*; do
			[ "$(cat "$p/name" 2>/dev/null)" = org.github.vhostmd.1 ] || continue
			echo "metrics ${p##*/}"
			timeout 20 sh -c 'exec 3<>"$1"; printf "GET /metrics/XML\n\n" >&3; while IFS= read -r line <&3; do [ -z "$line" ] && break; echo "$line"; done' sh "/dev/${p##*/}" | base64 | sed 's/^/b64 /'
			echo "endmetrics"
		done
	fi
}

# files prints the files under a folder: "file PATH", its contents as
# "b64 ..." lines and "endfile", or "bigfile SIZE PATH".
files() {
	(cd "$1" && find . -type f) | sort | while read -r f; do
		size=$(stat -c %s "$1/$f")
		if [ "$size" -gt 65536 ]; then # BigFile
			echo "bigfile $size ${f#./}"
			continue
		fi
		echo "file ${f#./}"
		base64 "$1/$f" | sed 's/^/b64 /'
		echo "endfile"
	done
}

echo "` + BeginMarker + `"
report
echo "` + EndMarker + `"

case "$action" in
poweroff)
	sync
	poweroff -f
	;;
acpi)
	echo "testguest: waiting for the ACPI power button"
	;;
*)
	echo "testguest: ignoring ACPI"
	;;
esac

# While it waits, a shell answers on the serial console (its controlling
# terminal, through cttyhack), again after each exit.
echo "` + ShellMarker + `"
while :; do
	setsid cttyhack sh
	sleep 1
done
`
