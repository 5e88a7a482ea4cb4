package testguest

import (
	"fmt"
	"strings"
)

// ListDisksCommand is a shell line for the test guest's shell (the action
// that reads commands from its console) that prints one line per block
// device: "blk NAME serial=SERIAL size=BYTES", the serial from sysfs or,
// on SCSI, from the device's VPD page 0x80 (empty when there is none).
const ListDisksCommand = `for d in /sys/block/*; do [ -e $d/device ] || continue; s=$(cat $d/serial 2>/dev/null || dd if=$d/device/vpd_pg80 bs=1 skip=4 2>/dev/null | tr -d '\000 '); echo "blk ${d##*/} serial=$s size=$(( $(cat $d/size) * 512 ))"; done`

// HasDisk tells whether listing, printed by ListDisksCommand, has a disk
// with serial and size (bytes).
func HasDisk(listing, serial string, size int64) bool {
	return strings.Contains(listing, fmt.Sprintf("serial=%s size=%d", serial, size))
}
