package testguest

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
)

// readCpio parses a newc archive (the tests' own reader).
func readCpio(t *testing.T, b []byte) []cpioEntry {
	t.Helper()
	var out []cpioEntry
	for off := 0; ; {
		if off+110 > len(b) || string(b[off:off+6]) != "070701" {
			t.Fatalf("bad header at %d", off)
		}
		field := func(i int) int {
			v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			return int(v)
		}
		mode, size, rmaj, rmin, nameSize := field(1), field(6), field(9), field(10), field(11)
		name := string(b[off+110 : off+110+nameSize-1])
		off += 110 + nameSize
		off += pad4(off)
		if name == "TRAILER!!!" {
			if off != len(b) {
				t.Fatalf("%d bytes after the trailer", len(b)-off)
			}
			return out
		}
		out = append(out, cpioEntry{name: name, mode: uint32(mode), data: b[off : off+size], rdevMajor: uint32(rmaj), rdevMinor: uint32(rmin)})
		off += size
		off += pad4(off)
	}
}

func TestCpioRoundTrip(t *testing.T) {
	in := []cpioEntry{
		{name: "init", mode: modeFile | 0o755, data: []byte("#!/bin/sh\n")},
		{name: "bin/sh", mode: modeSymlink | 0o777, data: []byte("busybox")},
		{name: "bin", mode: modeDir | 0o755},
		{name: "dev/console", mode: modeCharDev | 0o600, rdevMajor: 5, rdevMinor: 1},
		{name: "dev", mode: modeDir | 0o755},
		{name: "a/odd-size", mode: modeFile | 0o644, data: []byte("12345")},
		{name: "a", mode: modeDir | 0o755},
	}
	var buf bytes.Buffer
	if err := writeCpio(&buf, in); err != nil {
		t.Fatal(err)
	}
	got := readCpio(t, buf.Bytes())
	seen := map[string]bool{}
	for _, e := range got {
		if dir := filepath.Dir(e.name); dir != "." && !seen[dir] {
			t.Errorf("%s comes before its folder %s", e.name, dir)
		}
		seen[e.name] = true
	}
	if len(got) != len(in) {
		t.Fatalf("got %d entries, want %d", len(got), len(in))
	}
	for _, w := range in {
		for _, g := range got {
			if g.name == w.name && (g.mode != w.mode || !bytes.Equal(g.data, w.data) || g.rdevMajor != w.rdevMajor || g.rdevMinor != w.rdevMinor) {
				t.Errorf("%s: got %+v, want %+v", w.name, g, w)
			}
		}
	}
	hosttest.Files(t, DefaultBusybox)
	cmd := exec.Command(DefaultBusybox, "cpio", "-t")
	cmd.Stdin = bytes.NewReader(buf.Bytes())
	out, err := cmd.Output()
	if err != nil || strings.Count(string(out), "\n") != len(in) {
		t.Errorf("busybox cpio -t: %q, %v", out, err)
	}
}

// kernelTree returns the extracted kernel, or skips (fails under CI).
func kernelTree(t *testing.T) string {
	t.Helper()
	hosttest.Files(t, filepath.Join(DefaultKernelTree, "lib", "modules"))
	return DefaultKernelTree
}

func TestLoadOrderPutsDependenciesFirst(t *testing.T) {
	root := kernelTree(t)
	version, err := kernelVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	mods, err := loadOrder(filepath.Join(root, "lib", "modules", version), Modules)
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, m := range mods {
		for _, d := range m.depends {
			if _, ok := pos[d]; !ok {
				t.Errorf("%s is loaded before its dependency %s", m.name, d)
			}
		}
		pos[m.name] = i
	}
	// The chain DESIGN.md names, in the order modules.dep gives it.
	chain := []string{"virtio_ring", "virtio", "virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio_pci", "virtio_blk", "failover", "net_failover", "virtio_net", "cdrom", "isofs"}
	for _, m := range chain {
		if _, ok := pos[m]; !ok {
			t.Errorf("module %s is not loaded", m)
		}
	}
	for _, pair := range [][2]string{{"virtio_ring", "virtio_pci"}, {"virtio", "virtio_blk"}, {"failover", "net_failover"}, {"net_failover", "virtio_net"}, {"cdrom", "sr_mod"}, {"scsi_mod", "virtio_scsi"}} {
		if pos[pair[0]] > pos[pair[1]] {
			t.Errorf("%s after %s", pair[0], pair[1])
		}
	}
}
