// Package iso writes small ISO9660 images with Joliet extensions, the kind
// cloud-init's NoCloud (label "cidata") and ConfigDrive (label "config-2")
// data sources and config volumes read.
//
// The primary volume descriptor carries upper-case ISO9660 names for readers
// that know nothing else; the Joliet supplementary descriptor carries each
// name exactly as given (Linux's isofs, blkid, Windows and cloud-init all
// read it). Output is deterministic: the same files give the same bytes, so
// a caller can compare an image with the one on disk before rewriting it.
package iso

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// SectorSize is the logical block size of the images written here.
const SectorSize = 2048

// MaxNameLength is the longest name (in UTF-16 units) a path component may
// have: the longest Joliet identifier a 255-byte directory record holds.
const MaxNameLength = 103

// File is one regular file of an image. Path is slash-separated and relative
// to the image's root ("user-data", "openstack/latest/meta_data.json");
// the folders it names are created as needed.
type File struct {
	Path string
	Data []byte
}

// Build returns the bytes of an image labelled label holding files.
// Labels are at most 16 characters (Joliet's limit); paths must be relative,
// clean, unique and free of NUL and '/' inside components.
func Build(label string, files []File) ([]byte, error) {
	var buf bytes.Buffer
	if err := Write(&buf, label, files); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// node is a file or folder of the tree being written.
type node struct {
	name     string // path component as given
	dir      bool
	data     []byte
	children []*node
	dataLBA  uint32
}

// dirExtent is one folder as written in one of the two name spaces.
type dirExtent struct {
	node   *node
	ident  []byte // identifier in this name space (root: 0x00)
	parent int    // index of the parent in the path table order (root: 0)
	lba    uint32
	size   uint32 // bytes, a multiple of SectorSize
	// entries are the children, sorted, with their identifiers.
	entries []entry
}

type entry struct {
	node  *node
	ident []byte
	dir   int // index into the name space's dirs when node.dir
}

// namespace is one directory hierarchy: the primary one or Joliet's.
type namespace struct {
	joliet bool
	dirs   []*dirExtent // path table order
	ptLBA  [2]uint32    // L and M path table sectors
	ptSize uint32
}

// Write writes an image labelled label holding files to w.
func Write(w io.Writer, label string, files []File) error {
	if err := checkLabel(label); err != nil {
		return err
	}
	root, err := buildTree(files)
	if err != nil {
		return err
	}
	spaces := []*namespace{{joliet: false}, {joliet: true}}
	for _, ns := range spaces {
		if err := ns.collect(root); err != nil {
			return err
		}
	}

	// Sectors 0-15: system area; 16: primary, 17: Joliet, 18: terminator.
	next := uint32(19)
	for _, ns := range spaces {
		ns.ptSize = ns.pathTableSize()
		for i := range ns.ptLBA {
			ns.ptLBA[i] = next
			next += sectors(ns.ptSize)
		}
	}
	for _, ns := range spaces {
		for _, d := range ns.dirs {
			d.size = d.extentSize()
			d.lba = next
			next += d.size / SectorSize
		}
	}
	var fileOrder []*node
	walkFiles(root, &fileOrder)
	for _, f := range fileOrder {
		if len(f.data) == 0 {
			continue
		}
		if uint64(len(f.data)) > 0xFFFFFFFF {
			return fmt.Errorf("iso: %s: file larger than 4 GiB", f.name)
		}
		f.dataLBA = next
		next += sectors(uint32(len(f.data)))
	}
	total := next

	out := &sectorWriter{w: w}
	out.zero(16 * SectorSize)
	for _, ns := range spaces {
		out.write(ns.volumeDescriptor(label, total))
	}
	term := make([]byte, SectorSize)
	term[0] = 255
	copy(term[1:], "CD001")
	term[6] = 1
	out.write(term)
	for _, ns := range spaces {
		out.write(ns.pathTable(false))
		out.write(ns.pathTable(true))
	}
	for _, ns := range spaces {
		for _, d := range ns.dirs {
			out.write(ns.dirBytes(d))
		}
	}
	for _, f := range fileOrder {
		if len(f.data) > 0 {
			out.write(f.data)
		}
	}
	return out.err
}

func checkLabel(label string) error {
	if label == "" {
		return fmt.Errorf("iso: empty volume label")
	}
	if !utf8.ValidString(label) {
		return fmt.Errorf("iso: volume label is not valid UTF-8")
	}
	if strings.TrimRight(label, " ") != label {
		return fmt.Errorf("iso: volume label %q ends with a space", label)
	}
	if len(utf16.Encode([]rune(label))) > 16 {
		return fmt.Errorf("iso: volume label %q longer than 16 characters", label)
	}
	for _, r := range label {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("iso: volume label %q has a control character", label)
		}
	}
	return nil
}

// buildTree turns the flat list of files into a tree, refusing bad paths.
func buildTree(files []File) (*node, error) {
	root := &node{dir: true}
	for _, f := range files {
		if f.Path == "" || strings.HasPrefix(f.Path, "/") {
			return nil, fmt.Errorf("iso: path %q is not relative", f.Path)
		}
		parts := strings.Split(f.Path, "/")
		cur := root
		for i, p := range parts {
			if err := checkComponent(p); err != nil {
				return nil, fmt.Errorf("iso: path %q: %w", f.Path, err)
			}
			last := i == len(parts)-1
			var found *node
			for _, c := range cur.children {
				if c.name == p {
					found = c
				}
			}
			switch {
			case found == nil && last:
				cur.children = append(cur.children, &node{name: p, data: f.Data})
			case found == nil:
				found = &node{name: p, dir: true}
				cur.children = append(cur.children, found)
				cur = found
			case last || !found.dir:
				return nil, fmt.Errorf("iso: path %q given twice or both file and folder", f.Path)
			default:
				cur = found
			}
		}
	}
	return root, nil
}

func checkComponent(p string) error {
	switch {
	case p == "" || p == "." || p == "..":
		return fmt.Errorf("bad component %q", p)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("component has a NUL byte")
	case !utf8.ValidString(p):
		return fmt.Errorf("component is not valid UTF-8")
	case strings.HasSuffix(p, "."):
		// Linux's isofs drops trailing dots of Joliet names.
		return fmt.Errorf("component %q ends with a dot", p)
	case len(utf16.Encode([]rune(p))) > MaxNameLength:
		return fmt.Errorf("component longer than %d characters", MaxNameLength)
	}
	for _, r := range p {
		if r < 0x20 || r == '\\' || r == ';' {
			// ';' separates the version in ISO9660 names; '\\' and
			// control characters are not allowed in Joliet names.
			return fmt.Errorf("component %q has a character ISO9660/Joliet cannot hold", p)
		}
	}
	return nil
}

// walkFiles lists the files depth-first in name order: their data is laid
// out in that order.
func walkFiles(n *node, out *[]*node) {
	kids := append([]*node(nil), n.children...)
	sort.Slice(kids, func(i, j int) bool { return kids[i].name < kids[j].name })
	for _, c := range kids {
		if c.dir {
			walkFiles(c, out)
		} else {
			*out = append(*out, c)
		}
	}
}

// collect numbers the folders in path table order (breadth-first, each
// level ordered by parent number then identifier) and names every entry.
func (ns *namespace) collect(root *node) error {
	ns.dirs = []*dirExtent{{node: root, ident: []byte{0}, parent: 0}}
	for i := 0; i < len(ns.dirs); i++ {
		d := ns.dirs[i]
		used := map[string]bool{}
		for _, c := range d.node.children {
			id := ns.ident(c, used)
			used[string(id)] = true
			d.entries = append(d.entries, entry{node: c, ident: id})
		}
		sort.Slice(d.entries, func(a, b int) bool { return bytes.Compare(d.entries[a].ident, d.entries[b].ident) < 0 })
		for k := range d.entries {
			e := &d.entries[k]
			if e.node.dir {
				e.dir = len(ns.dirs)
				ns.dirs = append(ns.dirs, &dirExtent{node: e.node, ident: e.ident, parent: i})
			}
		}
	}
	if len(ns.dirs) > 0xFFFF {
		return fmt.Errorf("iso: too many folders")
	}
	return nil
}

// ident returns the identifier of n in this name space, unique among used.
func (ns *namespace) ident(n *node, used map[string]bool) []byte {
	if ns.joliet {
		return ucs2(n.name)
	}
	base, ext := primaryName(n.name, n.dir)
	for k := 0; ; k++ {
		b := base
		if k > 0 {
			suffix := fmt.Sprintf("_%d", k)
			if len(b)+len(suffix) > 8 {
				b = b[:8-len(suffix)]
			}
			b += suffix
		}
		id := b
		if !n.dir {
			id = b + "." + ext + ";1"
		}
		if !used[id] {
			return []byte(id)
		}
	}
}

// primaryName maps a name to ISO9660 level 1 d-characters: an 8.3 name for
// files, 8 characters for folders.
func primaryName(name string, dir bool) (base, ext string) {
	clean := func(s string, max int) string {
		var b strings.Builder
		for _, r := range strings.ToUpper(s) {
			if b.Len() == max {
				break
			}
			if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') || r == '_' {
				b.WriteRune(r)
			} else {
				b.WriteByte('_')
			}
		}
		return b.String()
	}
	if dir {
		return clean(name, 8), ""
	}
	b, e := name, ""
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		b, e = name[:i], name[i+1:]
	}
	base, ext = clean(b, 8), clean(e, 3)
	if base == "" {
		base = "_"
	}
	return base, ext
}

func ucs2(s string) []byte {
	u := utf16.Encode([]rune(s))
	b := make([]byte, 2*len(u))
	for i, c := range u {
		binary.BigEndian.PutUint16(b[2*i:], c)
	}
	return b
}

func recordLen(identLen int) int {
	n := 33 + identLen
	if n%2 == 1 {
		n++
	}
	return n
}

// extentSize is the folder's size: its records packed into sectors, none
// crossing a sector boundary.
func (d *dirExtent) extentSize() uint32 {
	used, secs := 0, 1
	add := func(n int) {
		if used+n > SectorSize {
			secs++
			used = 0
		}
		used += n
	}
	add(recordLen(1))
	add(recordLen(1))
	for _, e := range d.entries {
		add(recordLen(len(e.ident)))
	}
	return uint32(secs * SectorSize)
}

func (ns *namespace) pathTableSize() uint32 {
	var n uint32
	for _, d := range ns.dirs {
		l := 8 + len(d.ident)
		if l%2 == 1 {
			l++
		}
		n += uint32(l)
	}
	return n
}

func (ns *namespace) pathTable(bigEndian bool) []byte {
	var order binary.ByteOrder = binary.LittleEndian
	if bigEndian {
		order = binary.BigEndian
	}
	var b []byte
	for _, d := range ns.dirs {
		rec := make([]byte, 8+len(d.ident))
		rec[0] = byte(len(d.ident))
		order.PutUint32(rec[2:], d.lba)
		order.PutUint16(rec[6:], uint16(d.parent+1))
		copy(rec[8:], d.ident)
		if len(rec)%2 == 1 {
			rec = append(rec, 0)
		}
		b = append(b, rec...)
	}
	return b
}

// dirBytes encodes a folder's records.
func (ns *namespace) dirBytes(d *dirExtent) []byte {
	out := make([]byte, 0, d.size)
	put := func(rec []byte) {
		if len(out)%SectorSize+len(rec) > SectorSize {
			out = append(out, make([]byte, SectorSize-len(out)%SectorSize)...)
		}
		out = append(out, rec...)
	}
	parent := ns.dirs[d.parent]
	put(dirRecord([]byte{0}, d.lba, d.size, true))
	put(dirRecord([]byte{1}, parent.lba, parent.size, true))
	for _, e := range d.entries {
		if e.node.dir {
			c := ns.dirs[e.dir]
			put(dirRecord(e.ident, c.lba, c.size, true))
		} else {
			put(dirRecord(e.ident, e.node.dataLBA, uint32(len(e.node.data)), false))
		}
	}
	return append(out, make([]byte, int(d.size)-len(out))...)
}

// recordingDate is the fixed date of every record (1970-01-01 00:00 UTC),
// which keeps images byte-identical across runs.
var recordingDate = [7]byte{70, 1, 1, 0, 0, 0, 0}

func dirRecord(ident []byte, lba, size uint32, dir bool) []byte {
	rec := make([]byte, recordLen(len(ident)))
	rec[0] = byte(len(rec))
	bothEndian32(rec[2:], lba)
	bothEndian32(rec[10:], size)
	copy(rec[18:25], recordingDate[:])
	if dir {
		rec[25] = 2
	}
	bothEndian16(rec[28:], 1)
	rec[32] = byte(len(ident))
	copy(rec[33:], ident)
	return rec
}

func (ns *namespace) volumeDescriptor(label string, total uint32) []byte {
	vd := make([]byte, SectorSize)
	vd[0] = 1
	if ns.joliet {
		vd[0] = 2
	}
	copy(vd[1:], "CD001")
	vd[6] = 1
	ns.text(vd[8:40], "LINUX")
	ns.text(vd[40:72], label)
	bothEndian32(vd[80:], total)
	if ns.joliet {
		copy(vd[88:], "%/E") // UCS-2 level 3
	}
	bothEndian16(vd[120:], 1)
	bothEndian16(vd[124:], 1)
	bothEndian16(vd[128:], SectorSize)
	bothEndian32(vd[132:], ns.ptSize)
	binary.LittleEndian.PutUint32(vd[140:], ns.ptLBA[0])
	binary.BigEndian.PutUint32(vd[148:], ns.ptLBA[1])
	root := ns.dirs[0]
	copy(vd[156:190], dirRecord([]byte{0}, root.lba, root.size, true))
	for _, f := range [][2]int{{190, 318}, {318, 446}, {446, 574}, {574, 702}, {702, 739}, {739, 776}, {776, 813}} {
		ns.text(vd[f[0]:f[1]], "")
	}
	ns.text(vd[574:702], "VMI2LIBVIRT")
	const date = "1970010100000000"
	copy(vd[813:], date)
	copy(vd[830:], date)
	copy(vd[847:], "0000000000000000")
	copy(vd[864:], "0000000000000000")
	vd[881] = 1
	return vd
}

// text fills a descriptor string field, space padded (UCS-2 for Joliet).
func (ns *namespace) text(field []byte, s string) {
	if ns.joliet {
		for i := 0; i+1 < len(field); i += 2 {
			field[i], field[i+1] = 0, ' '
		}
		if len(field)%2 == 1 {
			field[len(field)-1] = 0
		}
		copy(field, ucs2(s))
		return
	}
	for i := range field {
		field[i] = ' '
	}
	copy(field, s)
}

func bothEndian32(b []byte, v uint32) {
	binary.LittleEndian.PutUint32(b, v)
	binary.BigEndian.PutUint32(b[4:], v)
}

func bothEndian16(b []byte, v uint16) {
	binary.LittleEndian.PutUint16(b, v)
	binary.BigEndian.PutUint16(b[2:], v)
}

func sectors(n uint32) uint32 { return (n + SectorSize - 1) / SectorSize }

// sectorWriter writes data padded to whole sectors and keeps the first error.
type sectorWriter struct {
	w   io.Writer
	err error
}

func (s *sectorWriter) write(b []byte) {
	if s.err != nil {
		return
	}
	if _, s.err = s.w.Write(b); s.err != nil {
		return
	}
	if pad := len(b) % SectorSize; pad != 0 {
		s.zero(SectorSize - pad)
	}
}

func (s *sectorWriter) zero(n int) {
	if s.err != nil {
		return
	}
	_, s.err = s.w.Write(make([]byte, n))
}
