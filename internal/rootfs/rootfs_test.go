package rootfs

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// entry is one tar entry of a test layer.
type entry struct {
	name     string
	typeflag byte
	body     string
	link     string
}

func file(name, body string) entry { return entry{name: name, typeflag: tar.TypeReg, body: body} }
func dir(name string) entry        { return entry{name: name, typeflag: tar.TypeDir} }
func symlink(name, target string) entry {
	return entry{name: name, typeflag: tar.TypeSymlink, link: target}
}
func hardlink(name, target string) entry {
	return entry{name: name, typeflag: tar.TypeLink, link: target}
}

// tarOf writes the entries as a tar archive.
func tarOf(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typeflag, Linkname: e.link, Mode: 0o644, Format: tar.FormatPAX}
		if e.typeflag == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestTarNames checks entryName and symlinkTarget on their own.
func TestTarNames(t *testing.T) {
	deepest := strings.Repeat("a/", maxDepth)
	longest := strings.Repeat("c", maxName)
	for raw, want := range map[string]string{"./disk/a": "disk/a", "disk//a/": "disk/a", "./": ".", "a/./b": "a/b",
		deepest: deepest[:len(deepest)-1], "./" + deepest + "./": deepest[:len(deepest)-1], longest: longest} {
		if got, err := entryName(raw); err != nil || got != want {
			t.Errorf("entryName(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, raw := range []string{"", "/a", "..", "a/../b", "a/..", "a\x00b", strings.Repeat("a/", 2049)} {
		if got, err := entryName(raw); err == nil {
			t.Errorf("entryName(%q) = %q, want an error", raw, got)
		}
	}
	for raw, why := range map[string]string{
		deepest + "b":           "name with more than 256 components",
		"disk/" + longest + "c": "name with a component of 256 bytes, longer than 255",
	} {
		if _, err := entryName(raw); err == nil || !strings.HasSuffix(err.Error(), why) {
			t.Errorf("entryName(%.20q...) = %v, want an error ending %q", raw, err, why)
		}
	}
	for _, c := range []struct{ name, target, want string }{
		{"a", "b", "b"},
		{"x/y/l", "../z", "../z"},
		{"x/y/l", "../../z", "../../z"},
		{"x/y/l", "/etc/z", "../../etc/z"},
		{"l", "/etc/z", "etc/z"},
		{"l", "/", "."},
		{"x/l", "/x/../y", "../y"},
		{"l", deepest, deepest},
		{"l", strings.Repeat(longest+"/", 15) + longest, strings.Repeat(longest+"/", 15) + longest},                                         // 4095 bytes
		{"x/l", "/" + strings.Repeat(longest+"/", 15) + longest[:maxName-3], "../" + strings.Repeat(longest+"/", 15) + longest[:maxName-3]}, // 4095 bytes once relative
	} {
		if got, err := symlinkTarget(c.name, c.target); err != nil || got != c.want {
			t.Errorf("symlinkTarget(%q, %q) = %q, %v; want %q", c.name, c.target, got, err, c.want)
		}
	}
	for _, c := range []struct{ name, target string }{{"l", ".."}, {"x/y/l", "../../../z"}, {"l", "/.."}, {"x/l", "a/../../../b"}, {"l", ""}, {"l", strings.Repeat("a/", 2049)}} {
		if got, err := symlinkTarget(c.name, c.target); err == nil {
			t.Errorf("symlinkTarget(%q, %q) = %q, want an error", c.name, c.target, got)
		}
	}
	for _, c := range []struct{ name, target, why string }{
		{"l", strings.Repeat("a/", 2048), "symbolic link to a target of 4096 bytes, longer than 4095"},
		{"l", deepest + "b", "symbolic link to a target with more than 256 components"},
		{"l", "x/" + longest + "c", "symbolic link to a target with a component of 256 bytes, longer than 255"},
		{"x/l", "/" + strings.Repeat(longest+"/", 15) + longest[:maxName-2], "made relative to the link's folder, is 4096 bytes, longer than 4095"},
	} {
		if got, err := symlinkTarget(c.name, c.target); err == nil || !strings.HasSuffix(err.Error(), c.why) {
			t.Errorf("symlinkTarget(%q, %.20q...) = %.20q..., %v; want an error ending %q", c.name, c.target, got, err, c.why)
		}
	}
}

// TestExtractWritesThroughRoot shows the last line of defence: even an
// extractor handed a folder where a link already leads out cannot write
// through it.
func TestExtractWritesThroughRoot(t *testing.T) {
	base := t.TempDir()
	rootfs := filepath.Join(base, "rootfs")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{rootfs, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(rootfs, "out")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	x := New(root, 1<<20)
	x.seen = map[string]bool{} // the extractor does not know of "out"
	err = x.Layer(bytes.NewReader(tarOf(t, file("out/evil", "x"))))
	if err == nil {
		t.Fatal("wrote through a link leading out")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("outside holds %v", entries)
	}
}

// FuzzExtract feeds arbitrary bytes, as two layers, to the extractor and
// checks what it leaves: nothing beside its folder, in it only folders,
// regular files and links, and when it accepted the layers, only links
// that resolve inside it (or to nothing); never a panic. It walks the
// folder with walkRoot, since a path of the image may be longer than the
// host's PATH_MAX once under the temporary folder, and need not be UTF-8.
//
// Run it with -fuzzminimizetime of a few seconds: by default the fuzzer
// minimizes each new interesting input for a minute without counting
// those executions (the lines say "execs: N (0/sec)" all along), and two
// layers of kilobytes, each execution writing and syncing files, never
// minimize within the minute.
//
//	go test ./internal/rootfs -run '^$' -fuzz '^FuzzExtract$' -fuzztime 10m -parallel 1 -fuzzminimizetime 3s
func FuzzExtract(f *testing.F) {
	seeds := [][]entry{
		{file("disk/disk.img", "disk"), dir("etc/"), file("etc/hostname", "h")},
		{file("../evil", "x")},
		{file("/abs", "x")},
		{symlink("l", "../../etc/passwd")},
		{symlink("l", "/etc/passwd"), file("l/x", "through")},
		{dir("b/"), symlink("a", "b/.."), symlink("c", "a/..")},
		{symlink("x", "y"), symlink("y", "x")},
		{hardlink("h", "../outside"), hardlink("i", "disk/disk.img")},
		{entry{name: "dev/null", typeflag: tar.TypeChar}},
		{file("disk/.wh.disk.img", ""), file(".wh..wh..opq", ""), file("a/.wh..wh..opq", "")},
		{file("big", strings.Repeat("z", 100000))},
		{file(strings.Repeat("d/", 100000)+"deep", "x")},
		// Folders 32 deep, not maxDepth: syncing 256 folders takes the
		// fuzzer a second an execution (TestDeepFolders goes that deep).
		{dir(deepFolder(32)), file(deepFolder(31)+"f", "x"), symlink(deepFolder(31)+"l", "/"+deepFolder(31))},
		{file("a/\xa0\xa0/f", "not UTF-8"), symlink("a/\xa0\xa0/l", "f")},
	}
	for i, s := range seeds {
		f.Add(tarOf(f, s...), tarOf(f, seeds[(i+1)%len(seeds)]...))
	}
	f.Fuzz(func(t *testing.T, upper, lower []byte) {
		base := t.TempDir()
		rootfs := filepath.Join(base, "rootfs")
		if err := os.Mkdir(rootfs, 0o755); err != nil {
			t.Fatal(err)
		}
		root, err := os.OpenRoot(rootfs)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		x := New(root, 1<<20)
		accepted := x.Layer(bytes.NewReader(upper)) == nil &&
			x.Layer(bytes.NewReader(lower)) == nil && x.Finish() == nil
		if entries, err := os.ReadDir(base); err != nil || len(entries) != 1 {
			t.Fatalf("beside the folder: %v, %v", entries, err)
		}
		err = walkRoot(root, ".", func(p string, mode fs.FileMode) {
			switch {
			case mode.IsDir(), mode.IsRegular():
			case mode&fs.ModeSymlink != 0:
				target, err := filepath.EvalSymlinks(filepath.Join(rootfs, p))
				// A refused image is removed whole, links and all; an
				// accepted one has no link leading out.
				if accepted && err == nil && target != rootfs && !strings.HasPrefix(target, rootfs+"/") {
					t.Errorf("%q leads to %q", p, target)
				}
			default:
				t.Errorf("%q is a %v", p, mode)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// walkRoot calls fn with the path (from the top of the folder) and type of
// every entry under dir, the folder r holds open, each folder opened in
// its parent's: unlike filepath.WalkDir, paths may pass PATH_MAX, and
// unlike fs.WalkDir over r.FS(), names need not be UTF-8.
func walkRoot(r *os.Root, dir string, fn func(p string, mode fs.FileMode)) error {
	f, err := r.Open(".")
	if err != nil {
		return err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := path.Join(dir, e.Name())
		fn(p, e.Type())
		if !e.IsDir() {
			continue
		}
		sub, err := r.OpenRoot(e.Name())
		if err != nil {
			return err
		}
		err = walkRoot(sub, p, fn)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
