package imagestore

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// rawLayer is a layer of exactly these bytes (its digest is theirs, so
// only their content is wrong, never their integrity).
func rawLayer(data []byte, mt types.MediaType) v1.Layer {
	return static.NewLayer(data, mt)
}

func gzipped(t testing.TB, data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestHostileLayers pulls images whose layers are well-formed blobs (their
// digests match) holding what must not be extracted. Each is refused with
// its condition, and the store and its surroundings are unchanged.
func TestHostileLayers(t *testing.T) {
	disk := file("disk/disk.img", "disk")
	valid := tarOf(t, disk, file("etc/hostname", strings.Repeat("guest", 400)))
	cases := []struct {
		name   string
		layers func(t *testing.T) []v1.Layer
		kind   error
		detail string
	}{
		{"dot-dot path", one(disk, file("../evil", "x")), ErrBadImage, `"../evil": path with ".."`},
		{"dot-dot inside a path", one(disk, file("disk/../../evil", "x")), ErrBadImage, `path with ".."`},
		{"absolute path", one(disk, file("/etc/evil", "x")), ErrBadImage, "absolute path"},
		{"symlink out", one(disk, symlink("disk/link", "../../etc/passwd")), ErrBadImage, "leads out of the image"},
		{"absolute symlink climbing out", one(disk, symlink("disk/link", "/../../etc/passwd")), ErrBadImage, "leads out of the image"},
		{"symlink out through symlinks", one(disk, dir("b/"), symlink("a", "b/.."), symlink("c", "a/..")), ErrBadImage, `"c": symbolic link that leads out`},
		{"symlink loop", one(disk, symlink("x", "y"), symlink("y", "x")), ErrBadImage, "loops"},
		{"hard link out", one(disk, hardlink("disk/h", "../../etc/passwd")), ErrBadImage, "hard link"},
		{"hard link absolute", one(disk, hardlink("disk/h", "/etc/passwd")), ErrBadImage, "hard link"},
		{"hard link to nothing", one(disk, hardlink("disk/h", "missing")), ErrBadImage, "not a regular file"},
		{"character device", one(disk, entry{name: "dev/null", typeflag: tar.TypeChar}), ErrBadImage, "device file"},
		{"block device", one(disk, entry{name: "dev/sda", typeflag: tar.TypeBlock}), ErrBadImage, "device file"},
		{"named pipe", one(disk, entry{name: "run/fifo", typeflag: tar.TypeFifo}), ErrBadImage, "named pipe"},
		{"whiteout of dot-dot", one(disk, file("disk/.wh...", "")), ErrBadImage, "whiteout"},
		{"name component of 256 bytes", one(disk, file("etc/"+strings.Repeat("n", 256), "x")), ErrBadImage, "a component of 256 bytes, longer than 255"},
		{"folders too deep", one(disk, dir(strings.Repeat("d/", 257))), ErrBadImage, "more than 256 components"},
		{"absolute symlink too long once relative", one(disk, symlink("disk/deep/link", "/"+strings.Repeat(strings.Repeat("t", 255)+"/", 15)+strings.Repeat("t", 250))),
			ErrBadImage, "is 4096 bytes, longer than 4095"},
		{"disk over the size limit", one(file("disk/disk.img", strings.Repeat("x", 5000))), ErrTooLarge, "exceeds the limit"},
		{"files over the size limit together", one(file("disk/disk.img", strings.Repeat("x", 3000)), file("disk/b", strings.Repeat("y", 3000))), ErrTooLarge, "exceeds the limit"},
		{"layer not a tar", func(t *testing.T) []v1.Layer {
			return []v1.Layer{rawLayer([]byte(strings.Repeat("not a tar archive ", 100)), types.DockerUncompressedLayer)}
		}, ErrBadImage, "layer 0"},
		{"gzip of no tar", func(t *testing.T) []v1.Layer {
			return []v1.Layer{rawLayer(gzipped(t, []byte(strings.Repeat("garbage", 200))), types.DockerLayer)}
		}, ErrBadImage, "layer 0"},
		{"truncated tar", func(t *testing.T) []v1.Layer {
			return []v1.Layer{layerOfTar(t, valid[:1600])}
		}, ErrBadImage, "unexpected EOF"},
		{"truncated gzip", func(t *testing.T) []v1.Layer {
			z := gzipped(t, valid)
			return []v1.Layer{rawLayer(z[:len(z)/2], types.DockerLayer)}
		}, ErrBadImage, "unexpected EOF"},
		{"not a layer media type", func(t *testing.T) []v1.Layer {
			return []v1.Layer{rawLayer(valid, "application/vnd.example.not-a-layer")}
		}, ErrBadImage, "media type"},
	}
	reg := newRegistry(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ref, _ := reg.push(t, "hostile/"+strings.ReplaceAll(c.name, " ", "-")+":1", imageOf(t, c.layers(t)...))
			s := newStore(t, Config{MaxImageSize: 4096})
			_, err := s.Resolve(context.Background(), Request{Reference: ref})
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.detail) {
				t.Fatalf("got %v, want %v with %q", err, c.kind, c.detail)
			}
			if e.Image != ref || !strings.HasPrefix(err.Error(), "image "+ref+" (sha256:") || Retryable(err) {
				t.Errorf("error %q does not name the image and digest, or is retryable", err)
			}
			if got := storeFiles(t, s); !slices.Equal(got, emptyStore) {
				t.Errorf("store after the refusal: %v, want %v", got, emptyStore)
			}
		})
	}
}

// one is a single layer of the entries.
func one(entries ...entry) func(t *testing.T) []v1.Layer {
	return func(t *testing.T) []v1.Layer { return []v1.Layer{layerOf(t, entries...)} }
}

// TestLayersFlatten checks the overlay rules: whiteouts, opaque folders,
// upper layers winning, and links kept inside the image.
func TestLayersFlatten(t *testing.T) {
	reg := newRegistry(t)
	ref, _ := reg.push(t, "flat:1", imageOf(t,
		layerOf(t, file("disk/old.img", "old"), file("etc/a", "lower a"), file("etc/b", "b"),
			file("opt/x", "x"), file("opt/y", "y"), file("replaced", "a file"), dir("gone/"), file("gone/f", "f"),
			file("images/real.qcow2", "real"), file("usr/lib/libc.so", "libc")),
		layerOf(t, file("disk/.wh.old.img", ""), file("etc/a", "upper a"), file("opt/.wh..wh..opq", ""),
			file("opt/z", "z"), dir("replaced/"), file("replaced/child", "child"), file(".wh.gone", ""),
			symlink("disk/disk.img", "/images/real.qcow2"), symlink("lib", "usr/lib"),
			file("etc/hostname", "h"), hardlink("etc/hostname2", "etc/hostname")),
	))
	s := newStore(t, Config{})
	img, err := s.Resolve(context.Background(), Request{Reference: ref})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	err = filepath.WalkDir(img.Dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(img.Dir, p)
		if d.Type()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			rel += " -> " + target
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".", "disk", "disk/disk.img -> ../images/real.qcow2", "etc", "etc/a", "etc/b", "etc/hostname", "etc/hostname2",
		"images", "images/real.qcow2", "lib -> usr/lib", "opt", "opt/z", "replaced", "replaced/child", "usr", "usr/lib", "usr/lib/libc.so"}
	if !slices.Equal(files, want) {
		t.Errorf("files:\n%v\nwant:\n%v", files, want)
	}
	if got := readFile(t, filepath.Join(img.Dir, "etc/a")); got != "upper a" {
		t.Errorf("etc/a = %q, want the upper layer's", got)
	}
	p, err := img.DiskPath("")
	if err != nil || p != "/disk/disk.img" {
		t.Fatalf("DiskPath = %q, %v", p, err)
	}
	if host, err := img.HostPath(p); err != nil || readFile(t, host) != "real" {
		t.Errorf("HostPath(%s) = %s, %v", p, host, err)
	}
	if host, err := img.HostPath("/lib/libc.so"); err != nil || readFile(t, host) != "libc" {
		t.Errorf("HostPath through a link = %s, %v", host, err)
	}
	a, _ := os.Stat(filepath.Join(img.Dir, "etc/hostname"))
	b, _ := os.Stat(filepath.Join(img.Dir, "etc/hostname2"))
	if !os.SameFile(a, b) {
		t.Error("the hard link is not one")
	}
}

// TestDiskPath checks KubeVirt's rule for a containerDisk's disk file.
func TestDiskPath(t *testing.T) {
	reg := newRegistry(t)
	cases := []struct {
		name    string
		entries []entry
		path    string
		want    string
	}{
		{"the one file under /disk/", []entry{file("disk/any-name.raw", "d")}, "", "/disk/any-name.raw"},
		{"an explicit path", []entry{file("images/x.qcow2", "d")}, "images/x.qcow2", "/images/x.qcow2"},
		{"explicit path kept inside the image", []entry{file("images/x.qcow2", "d")}, "/../../images/x.qcow2", "/images/x.qcow2"},
		{"no /disk/", []entry{file("images/x.qcow2", "d")}, "", ""},
		{"empty /disk/", []entry{dir("disk/")}, "", ""},
		{"two files under /disk/", []entry{file("disk/a", "a"), file("disk/b", "b")}, "", ""},
		{"a folder under /disk/", []entry{dir("disk/sub/")}, "", ""},
		{"explicit path missing", []entry{file("disk/a", "a")}, "/disk/b", ""},
		{"a link out of the image", []entry{symlink("disk/a", "../../../etc/passwd")}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, Config{})
			ref, _ := reg.push(t, "diskpath/"+strings.ReplaceAll(c.name, " ", "-")+":1", imageOf(t, layerOf(t, c.entries...)))
			img, err := s.Resolve(context.Background(), Request{Reference: ref})
			if err != nil {
				if c.want == "" && errors.Is(err, ErrBadImage) {
					return // refused already at extraction
				}
				t.Fatal(err)
			}
			got, err := img.DiskPath(c.path)
			if c.want == "" {
				if !errors.Is(err, ErrNoDisk) {
					t.Errorf("DiskPath(%q) = %q, %v; want ErrNoDisk", c.path, got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("DiskPath(%q) = %q, %v; want %q", c.path, got, err, c.want)
			}
		})
	}
}
