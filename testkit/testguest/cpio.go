package testguest

import (
	"fmt"
	"io"
	"sort"
)

// cpioEntry is one member of a newc ("070701") cpio archive, the format
// the kernel unpacks into its initramfs.
type cpioEntry struct {
	name      string // without a leading slash
	mode      uint32 // type bits and permissions
	data      []byte // file contents, or a symlink's target
	rdevMajor uint32
	rdevMinor uint32
}

// File type bits of cpio modes.
const (
	modeDir     = 0o040000
	modeFile    = 0o100000
	modeSymlink = 0o120000
	modeCharDev = 0o020000
)

// writeCpio writes entries as a newc archive with fixed owners and times,
// so the same entries give the same bytes.
func writeCpio(w io.Writer, entries []cpioEntry) error {
	sorted := append([]cpioEntry(nil), entries...)
	// A name sorts after its prefixes, so folders come before their files.
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	sorted = append(sorted, cpioEntry{name: "TRAILER!!!"})
	for i, e := range sorted {
		name := e.name + "\x00"
		hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
			i+1, e.mode, 0, 0, 1, 0, len(e.data), 0, 0, e.rdevMajor, e.rdevMinor, len(name), 0)
		if e.name == "TRAILER!!!" {
			hdr = fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
				0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, len(name), 0)
		}
		rec := []byte(hdr + name)
		rec = append(rec, make([]byte, pad4(len(rec)))...)
		rec = append(rec, e.data...)
		rec = append(rec, make([]byte, pad4(len(e.data)))...)
		if _, err := w.Write(rec); err != nil {
			return err
		}
	}
	return nil
}

func pad4(n int) int { return (4 - n%4) % 4 }
