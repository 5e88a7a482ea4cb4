package iso

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
)

// readTree is a minimal reader for the tests: it walks the tree of the
// volume descriptor at sector vd and returns path → content.
func readTree(t *testing.T, img []byte, vd int) (label string, files map[string]string) {
	t.Helper()
	desc := img[vd*SectorSize : (vd+1)*SectorSize]
	joliet := desc[0] == 2
	name := func(b []byte) string { return decodeName(b, joliet) }
	label = strings.TrimRight(name(desc[40:72]), " ")
	files = map[string]string{}
	var walk func(lba, size uint32, prefix string)
	walk = func(lba, size uint32, prefix string) {
		ext := img[lba*SectorSize : lba*SectorSize+size]
		for off := 0; off < len(ext); {
			l := int(ext[off])
			if l == 0 { // rest of the sector is padding
				off = (off/SectorSize + 1) * SectorSize
				continue
			}
			rec := ext[off : off+l]
			off += l
			idLen := int(rec[32])
			id := rec[33 : 33+idLen]
			if idLen == 1 && (id[0] == 0 || id[0] == 1) {
				continue
			}
			clba := binary.LittleEndian.Uint32(rec[2:])
			csize := binary.LittleEndian.Uint32(rec[10:])
			if binary.BigEndian.Uint32(rec[6:]) != clba || binary.BigEndian.Uint32(rec[14:]) != csize {
				t.Fatalf("both-endian fields disagree in %q", name(id))
			}
			p := prefix + name(id)
			if rec[25]&2 != 0 {
				walk(clba, csize, p+"/")
			} else {
				files[p] = string(img[clba*SectorSize : clba*SectorSize+csize])
			}
		}
	}
	root := desc[156:190]
	walk(binary.LittleEndian.Uint32(root[2:]), binary.LittleEndian.Uint32(root[10:]), "")
	return label, files
}

var sample = []File{
	{Path: "user-data", Data: []byte("#cloud-config\npassword: s3cr3t\n")},
	{Path: "meta-data", Data: []byte("instance-id: default.vm\nlocal-hostname: vm\n")},
	{Path: "openstack/latest/meta_data.json", Data: []byte(`{"uuid":"x"}`)},
	{Path: "openstack/latest/user_data", Data: bytes.Repeat([]byte("a"), 5000)},
	{Path: "openstack/latest/network_data.json", Data: []byte(`{}`)},
	{Path: "empty", Data: nil},
	{Path: "ünïcode name with spaces", Data: []byte("x")},
}

func TestJolietTreeHoldsNamesAndContents(t *testing.T) {
	img, err := Build("config-2", sample)
	if err != nil {
		t.Fatal(err)
	}
	if len(img)%SectorSize != 0 {
		t.Fatalf("image size %d is not whole sectors", len(img))
	}
	if got := binary.LittleEndian.Uint32(img[16*SectorSize+80:]); int(got)*SectorSize != len(img) {
		t.Fatalf("volume space size %d sectors, image has %d", got, len(img)/SectorSize)
	}
	label, files := readTree(t, img, 17)
	if label != "config-2" {
		t.Errorf("Joliet label %q", label)
	}
	want := map[string]string{}
	for _, f := range sample {
		want[f.Path] = string(f.Data)
	}
	if !reflect.DeepEqual(files, want) {
		t.Errorf("Joliet tree:\n got %q\nwant %q", files, want)
	}
	plabel, pfiles := readTree(t, img, 16)
	if plabel != "config-2" {
		t.Errorf("primary label %q", plabel)
	}
	if pfiles["USER_DAT.;1"] != string(sample[0].Data) || pfiles["OPENSTAC/LATEST/META_DAT.JSO;1"] != `{"uuid":"x"}` {
		t.Errorf("primary tree: %q", pfiles)
	}
	if len(pfiles) != len(want) {
		t.Errorf("primary tree has %d files, want %d (names must stay unique): %q", len(pfiles), len(want), pfiles)
	}
}

func TestDeterministic(t *testing.T) {
	a, _ := Build("cidata", sample)
	rev := append([]File(nil), sample...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	b, _ := Build("cidata", rev)
	if !bytes.Equal(a, b) {
		t.Fatal("same files in another order gave other bytes")
	}
}

func TestPrimaryNamesStayUnique(t *testing.T) {
	var files []File
	for _, n := range []string{"user-data", "user_data", "user.data", "USER-DATA", "user-dat"} {
		files = append(files, File{Path: n, Data: []byte(n)})
	}
	img, err := Build("x", files)
	if err != nil {
		t.Fatal(err)
	}
	_, pfiles := readTree(t, img, 16)
	if len(pfiles) != len(files) {
		t.Fatalf("primary names collide: %q", pfiles)
	}
}

func TestManyEntriesSpanSectors(t *testing.T) {
	var files []File
	for i := 0; i < 300; i++ {
		files = append(files, File{Path: "dir/" + strings.Repeat("n", 40) + string(rune('a'+i%26)) + strings.Repeat("x", i%7) + "-" + itoa(i), Data: []byte(itoa(i))})
	}
	img, err := Build("many", files)
	if err != nil {
		t.Fatal(err)
	}
	_, jf := readTree(t, img, 17)
	_, pf := readTree(t, img, 16)
	if len(jf) != 300 || len(pf) != 300 {
		t.Fatalf("got %d Joliet and %d primary files, want 300", len(jf), len(pf))
	}
	for _, f := range files {
		if jf[f.Path] != string(f.Data) {
			t.Fatalf("%s: got %q", f.Path, jf[f.Path])
		}
	}
}

func itoa(i int) string {
	return strings.TrimLeft(string([]byte{byte('0' + i/100), byte('0' + i/10%10), byte('0' + i%10)}), "0") + "_"
}

func TestRefusesBadInput(t *testing.T) {
	cases := map[string]struct {
		label string
		files []File
	}{
		"absolute":        {"x", []File{{Path: "/etc/passwd"}}},
		"dotdot":          {"x", []File{{Path: "a/../b"}}},
		"empty component": {"x", []File{{Path: "a//b"}}},
		"nul":             {"x", []File{{Path: "a\x00b"}}},
		"twice":           {"x", []File{{Path: "a"}, {Path: "a"}}},
		"file and folder": {"x", []File{{Path: "a"}, {Path: "a/b"}}},
		"too long":        {"x", []File{{Path: strings.Repeat("a", MaxNameLength+1)}}},
		"trailing dot":    {"x", []File{{Path: "a."}}},
		"long label":      {"seventeen-chars-x", nil},
		"empty label":     {"", nil},
	}
	for name, c := range cases {
		if _, err := Build(c.label, c.files); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestIsoinfoReadsImage checks the image with genisoimage's isoinfo and
// blkid when they are installed (CI installs them).
func TestIsoinfoReadsImage(t *testing.T) {
	hosttest.Tools(t, "isoinfo", "blkid")
	img, err := Build("cidata", sample)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "a.iso")
	if err := os.WriteFile(f, img, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("isoinfo", "-J", "-i", f, "-x", "/openstack/latest/meta_data.json").Output()
	if err != nil || string(out) != `{"uuid":"x"}` {
		t.Fatalf("isoinfo -x: %q, %v", out, err)
	}
	out, err = exec.Command("isoinfo", "-d", "-i", f).Output()
	if err != nil || !strings.Contains(string(out), "Volume id: cidata") || !strings.Contains(string(out), "Joliet") {
		t.Fatalf("isoinfo -d: %s, %v", out, err)
	}
	out, err = exec.Command("blkid", "-o", "value", "-s", "LABEL", f).Output()
	if err != nil || strings.TrimSpace(string(out)) != "cidata" {
		t.Fatalf("blkid label: %q, %v", out, err)
	}
}

func TestReadGivesBackWhatWasWritten(t *testing.T) {
	img, err := Build("config-2", sample)
	if err != nil {
		t.Fatal(err)
	}
	label, files, err := Read(img)
	if err != nil {
		t.Fatal(err)
	}
	if label != "config-2" || len(files) != len(sample) {
		t.Fatalf("label %q, %d files", label, len(files))
	}
	for _, f := range sample {
		if string(files[f.Path]) != string(f.Data) {
			t.Errorf("%s: got %q", f.Path, files[f.Path])
		}
	}
	if _, _, err := Read(img[:len(img)-SectorSize]); err == nil {
		t.Error("Read of a truncated image gave no error")
	}
	if _, _, err := Read(make([]byte, 20*SectorSize)); err == nil {
		t.Error("Read of zeros gave no error")
	}
}
