package testguest

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Report is what the test guest saw, as it printed it on its console.
type Report struct {
	CPUs        int
	MemTotalKiB int64
	Disks       []Disk
	NICs        []NIC
	ISOs        []ISO
	// Metrics is the downward metrics document the guest read from its
	// channel (MetricsArg), without the blank line that ends it.
	Metrics string
	// Shares are the virtiofs file systems the guest was asked to mount
	// (VirtiofsArg), in that order.
	Shares []Share
	// Firmware is "efi" or "bios".
	Firmware string
	// SecureBoot is "enabled", "disabled" or "unknown" as the kernel saw
	// it under EFI; empty under BIOS.
	SecureBoot string
	// Lockdown is the kernel's lockdown mode: "none", "integrity" or
	// "confidentiality" (Debian's kernel locks down under secure boot).
	Lockdown string
	// Cmdline is the kernel's command line.
	Cmdline string
	// BootID is the kernel's boot ID (/proc/sys/kernel/random/boot_id),
	// new at each boot.
	BootID string
	// Devices are the other devices the kernel bound, in report order.
	Devices []Device
}

// Device is one "device KIND DETAIL" line of the report: KIND virtio
// (DETAIL the driver: virtio_balloon, virtio_rng...), watchdog (its
// identity), rng (the current hardware RNG), tpm ("tpm0 version 2"),
// sound (the driver), input (the device's name), serial ("ttyS0 16550A").
type Device struct {
	Kind   string
	Detail string
}

// Disk is one block device of the guest.
type Disk struct {
	Name   string // kernel name: vda, sda, sr0
	Serial string // empty when the bus exposes none
	Size   int64  // bytes
	Bus    string // virtio, sata, scsi, usb or other (from sysfs)
	CDROM  bool   // a CD-ROM drive (SCSI peripheral type 5)
}

// NIC is one network interface of the guest.
type NIC struct {
	Name   string
	MAC    string // lower case, colon separated
	Driver string // the kernel driver bound to it: virtio_net, e1000e...
}

// ISO is a block device holding an ISO9660 file system, with its files.
type ISO struct {
	Device string
	Label  string
	Files  map[string][]byte // path relative to the root → contents
	// BigFiles are the files over BigFile bytes, path → size, whose
	// contents the report leaves out.
	BigFiles map[string]int64
}

// Share is a virtiofs file system the guest mounted by its tag, with its
// files (as an ISO's); Failed when it did not mount.
type Share struct {
	Tag      string
	Failed   bool
	Files    map[string][]byte
	BigFiles map[string]int64
}

// Share returns the virtiofs share of tag, or nil.
func (r *Report) Share(tag string) *Share {
	for i := range r.Shares {
		if r.Shares[i].Tag == tag {
			return &r.Shares[i]
		}
	}
	return nil
}

// ISO returns the first ISO labelled label, or nil.
func (r *Report) ISO(label string) *ISO {
	for i := range r.ISOs {
		if r.ISOs[i].Label == label {
			return &r.ISOs[i]
		}
	}
	return nil
}

// UserData returns the user-data file of the ISO labelled "cidata".
func (r *Report) UserData() (string, bool) {
	iso := r.ISO("cidata")
	if iso == nil {
		return "", false
	}
	d, ok := iso.Files["user-data"]
	return string(d), ok
}

// DiskByName returns the disk the kernel named name, or nil.
func (r *Report) DiskByName(name string) *Disk {
	for i := range r.Disks {
		if r.Disks[i].Name == name {
			return &r.Disks[i]
		}
	}
	return nil
}

// NICByMAC returns the NIC with MAC address mac (any case), or nil.
func (r *Report) NICByMAC(mac string) *NIC {
	for i := range r.NICs {
		if r.NICs[i].MAC == strings.ToLower(mac) {
			return &r.NICs[i]
		}
	}
	return nil
}

// DevicesOf returns the details of the devices of kind, in report order.
func (r *Report) DevicesOf(kind string) []string {
	var out []string
	for _, d := range r.Devices {
		if d.Kind == kind {
			out = append(out, d.Detail)
		}
	}
	return out
}

// KernelArg returns the value of the kernel argument key=value on the
// guest's command line, and whether it was there.
func (r *Report) KernelArg(key string) (string, bool) {
	for _, arg := range strings.Fields(r.Cmdline) {
		if k, v, ok := strings.Cut(arg, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// DiskBySerial returns the disk with serial s, or nil.
func (r *Report) DiskBySerial(s string) *Disk {
	for i := range r.Disks {
		if r.Disks[i].Serial == s {
			return &r.Disks[i]
		}
	}
	return nil
}

// ParseConsole parses the last complete report in a serial console
// transcript. Lines outside the markers are ignored, and so are unknown
// lines inside them (kernel messages may slip in).
func ParseConsole(text string) (Report, error) {
	text = strings.ReplaceAll(text, "\r", "")
	begin := strings.LastIndex(text, BeginMarker+"\n")
	if begin < 0 {
		return Report{}, fmt.Errorf("testguest: no %q line in the console output", BeginMarker)
	}
	body := text[begin+len(BeginMarker)+1:]
	end := strings.Index(body, "\n"+EndMarker)
	if end < 0 {
		if strings.HasPrefix(body, EndMarker) {
			end = 0
		} else {
			return Report{}, fmt.Errorf("testguest: report not finished (no %q line)", EndMarker)
		}
	}
	var r Report
	// files and big are the files of the last iso or share line.
	var files map[string][]byte
	var big map[string]int64
	var file string
	var b64 strings.Builder
	inFile, inMetrics := false, false
	for n, line := range strings.Split(body[:end], "\n") {
		key, rest, _ := strings.Cut(line, " ")
		bad := func(err error) error {
			return fmt.Errorf("testguest: report line %d %q: %v", n+1, line, err)
		}
		if inMetrics {
			switch key {
			case "b64":
				b64.WriteString(strings.TrimSpace(rest))
			case "endmetrics":
				data, err := base64.StdEncoding.DecodeString(b64.String())
				if err != nil {
					return Report{}, bad(err)
				}
				r.Metrics, inMetrics = string(data), false
			}
			continue
		}
		if inFile {
			switch key {
			case "b64":
				b64.WriteString(strings.TrimSpace(rest))
			case "endfile":
				data, err := base64.StdEncoding.DecodeString(b64.String())
				if err != nil {
					return Report{}, bad(err)
				}
				files[file] = data
				inFile = false
			}
			continue
		}
		var err error
		switch key {
		case "cpus":
			r.CPUs, err = strconv.Atoi(rest)
		case "memtotal_kib":
			r.MemTotalKiB, err = strconv.ParseInt(rest, 10, 64)
		case "disk":
			var d Disk
			var fields map[string]string
			d.Name, fields, err = nameAndFields(rest, "serial", "size")
			if err == nil {
				d.Serial = fields["serial"]
				d.Size, err = strconv.ParseInt(fields["size"], 10, 64)
				r.Disks = append(r.Disks, d)
			}
		case "nic":
			var fields map[string]string
			var name string
			name, fields, err = nameAndFields(rest, "mac")
			if err == nil {
				r.NICs = append(r.NICs, NIC{Name: name, MAC: strings.ToLower(fields["mac"])})
			}
		case "iso":
			var fields map[string]string
			var name string
			name, fields, err = nameAndFields(rest, "label")
			if err == nil {
				files, big = map[string][]byte{}, map[string]int64{}
				r.ISOs = append(r.ISOs, ISO{Device: name, Label: fields["label"], Files: files, BigFiles: big})
			}
		case "metrics":
			inMetrics = true
			b64.Reset()
		case "share":
			tag, failed, _ := strings.Cut(rest, " ")
			files, big = map[string][]byte{}, map[string]int64{}
			r.Shares = append(r.Shares, Share{Tag: tag, Failed: failed == "failed", Files: files, BigFiles: big})
		case "bigfile":
			size, path, _ := strings.Cut(rest, " ")
			switch {
			case big == nil:
				err = fmt.Errorf("bigfile before any iso or share line")
			case path == "":
				err = fmt.Errorf("no path")
			default:
				big[path], err = strconv.ParseInt(size, 10, 64)
			}
		case "firmware":
			r.Firmware = rest
		case "secureboot":
			r.SecureBoot = rest
		case "lockdown":
			r.Lockdown = rest
		case "cmdline":
			r.Cmdline = rest
		case "bootid":
			r.BootID = rest
		case "diskbus":
			var fields map[string]string
			var name string
			name, fields, err = nameAndFields(rest, "bus", "type")
			if d := r.DiskByName(name); err == nil && d != nil {
				d.Bus, d.CDROM = fields["bus"], fields["type"] == "cdrom"
			} else if err == nil {
				err = fmt.Errorf("no disk line for %s before it", name)
			}
		case "nicdriver":
			var fields map[string]string
			var name string
			name, fields, err = nameAndFields(rest, "driver")
			if n := r.nicByName(name); err == nil && n != nil {
				n.Driver = fields["driver"]
			} else if err == nil {
				err = fmt.Errorf("no nic line for %s before it", name)
			}
		case "device":
			kind, detail, _ := strings.Cut(rest, " ")
			r.Devices = append(r.Devices, Device{Kind: kind, Detail: detail})
		case "file":
			if files == nil {
				err = fmt.Errorf("file before any iso or share line")
			} else {
				file, inFile = rest, true
				b64.Reset()
			}
		}
		if err != nil {
			return Report{}, bad(err)
		}
	}
	if inFile {
		return Report{}, fmt.Errorf("testguest: file %q of the report not finished", file)
	}
	return r, nil
}

// BootIDs lists the boot IDs of every report in a serial console
// transcript (a console log that appends across boots), in order, each
// once: a guest that booted n times has n.
func BootIDs(text string) []string {
	var ids []string
	in := false
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r", ""), "\n") {
		switch id, ok := strings.CutPrefix(line, "bootid "); {
		case line == BeginMarker:
			in = true
		case line == EndMarker:
			in = false
		case in && ok && !slices.Contains(ids, id):
			ids = append(ids, id)
		}
	}
	return ids
}

func (r *Report) nicByName(name string) *NIC {
	for i := range r.NICs {
		if r.NICs[i].Name == name {
			return &r.NICs[i]
		}
	}
	return nil
}

// nameAndFields splits "NAME k1=v1 k2=v2" where the last field's value may
// hold spaces (a label) and earlier values may not; each of keys must be
// present, in order.
func nameAndFields(s string, keys ...string) (string, map[string]string, error) {
	name, rest, _ := strings.Cut(s, " ")
	if name == "" {
		return "", nil, fmt.Errorf("no name")
	}
	fields := map[string]string{}
	for i, k := range keys {
		if !strings.HasPrefix(rest, k+"=") {
			return "", nil, fmt.Errorf("no %s= field", k)
		}
		rest = rest[len(k)+1:]
		if i == len(keys)-1 {
			fields[k] = rest
			break
		}
		next := strings.Index(rest, " "+keys[i+1]+"=")
		if next < 0 {
			return "", nil, fmt.Errorf("no %s= field", keys[i+1])
		}
		fields[k], rest = rest[:next], rest[next+1:]
	}
	return name, fields, nil
}
