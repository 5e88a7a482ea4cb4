// Package hostfiles is the I/O half of a VMI's host plan (package
// hostplan): it reads what a plan needs of the host's files — the folders
// behind config sources, the user QEMU runs as, the format of a disk — and
// applies a plan's artifacts: it checks them all before it writes anything,
// then makes the folders, ISOs, overlays and disks, and takes back what it
// made when a step fails. It needs no libvirt and no cgo, so its tests run
// on any machine with qemu-img. The launcher is its one user.
package hostfiles
