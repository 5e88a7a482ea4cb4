package iso

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf16"
)

// Read returns the label and files of an image: the Joliet tree when the
// image has one, else the primary tree (names as recorded there). It is
// meant for tests and checks of images like the ones Write makes, and
// refuses anything malformed rather than guessing.
func Read(img []byte) (label string, files map[string][]byte, err error) {
	desc := -1
	for s := 16; (s+1)*SectorSize <= len(img); s++ {
		vd := img[s*SectorSize : (s+1)*SectorSize]
		if string(vd[1:6]) != "CD001" {
			return "", nil, fmt.Errorf("iso: sector %d is not a volume descriptor", s)
		}
		if vd[0] == 255 {
			break
		}
		if vd[0] == 1 && desc < 0 {
			desc = s
		}
		if vd[0] == 2 && string(vd[88:90]) == "%/" { // Joliet

			desc = s
		}
	}
	if desc < 0 {
		return "", nil, fmt.Errorf("iso: no primary volume descriptor")
	}
	vd := img[desc*SectorSize : (desc+1)*SectorSize]
	joliet := vd[0] == 2
	name := func(b []byte) string { return decodeName(b, joliet) }
	label = strings.TrimRight(name(vd[40:72]), " \x00")
	files = map[string][]byte{}
	extent := func(lba, size uint32) ([]byte, error) {
		start, end := uint64(lba)*SectorSize, uint64(lba)*SectorSize+uint64(size)
		if end > uint64(len(img)) {
			return nil, fmt.Errorf("iso: extent at sector %d runs past the image", lba)
		}
		return img[start:end], nil
	}
	var walk func(lba, size uint32, prefix string, depth int) error
	walk = func(lba, size uint32, prefix string, depth int) error {
		if depth > 32 {
			return fmt.Errorf("iso: folders nested too deep")
		}
		ext, err := extent(lba, size)
		if err != nil {
			return err
		}
		for off := 0; off < len(ext); {
			l := int(ext[off])
			if l == 0 {
				off = (off/SectorSize + 1) * SectorSize
				continue
			}
			if l < 34 || off+l > len(ext) || 33+int(ext[off+32]) > l {
				return fmt.Errorf("iso: bad directory record in %q", prefix)
			}
			rec := ext[off : off+l]
			off += l
			id := rec[33 : 33+int(rec[32])]
			if len(id) == 1 && (id[0] == 0 || id[0] == 1) {
				continue
			}
			clba, csize := binary.LittleEndian.Uint32(rec[2:]), binary.LittleEndian.Uint32(rec[10:])
			p := prefix + name(id)
			if rec[25]&2 != 0 {
				if err := walk(clba, csize, p+"/", depth+1); err != nil {
					return err
				}
				continue
			}
			data, err := extent(clba, csize)
			if err != nil {
				return err
			}
			files[p] = data
		}
		return nil
	}
	root := vd[156:190]
	if err := walk(binary.LittleEndian.Uint32(root[2:]), binary.LittleEndian.Uint32(root[10:]), "", 0); err != nil {
		return "", nil, err
	}
	return label, files, nil
}

// decodeName decodes a name or label as a volume descriptor stores it:
// bytes in the primary descriptor, big-endian UCS-2 in a Joliet one.
func decodeName(b []byte, joliet bool) string {
	if !joliet {
		return string(b)
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = binary.BigEndian.Uint16(b[2*i:])
	}
	return string(utf16.Decode(u))
}
