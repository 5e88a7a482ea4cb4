package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// diskImage is an image holding one containerDisk file.
func diskImage(t *testing.T, content string) v1.Image {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "disk/disk.img", Mode: 0o644, Size: int64(len(content))}); err != nil {
		t.Fatal(err)
	}
	io.WriteString(tw, content)
	tw.Close()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestImageImport runs the command as its doc says, on an OCI layout and
// on a docker save tarball, and on a source that is neither.
func TestImageImport(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "imageimport")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	oci := filepath.Join(dir, "oci")
	p, err := layout.Write(oci, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	fromLayout := diskImage(t, "from a layout")
	if err := p.AppendImage(fromLayout); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "saved.tar")
	fromArchive := diskImage(t, "from docker save")
	if err := tarball.WriteToFile(archive, name.MustParseReference("example.org/disk:1").(name.Tag), fromArchive); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "store")
	for _, c := range []struct {
		ref, source, content string
		img                  v1.Image
	}{
		{"localhost/disks/a:1", oci, "from a layout", fromLayout},
		{"localhost/disks/b:1", archive, "from docker save", fromArchive},
	} {
		out, err := exec.Command(bin, "-store", store, c.ref, c.source).Output()
		if err != nil {
			t.Fatalf("%s: %v", c.source, err)
		}
		d, _ := c.img.Digest()
		fields := strings.Fields(string(out))
		if len(fields) != 3 || fields[0] != c.ref || fields[1] != d.String() {
			t.Fatalf("output %q, want %s %s FOLDER", out, c.ref, d)
		}
		if data, err := os.ReadFile(filepath.Join(fields[2], "disk/disk.img")); err != nil || string(data) != c.content {
			t.Errorf("%s: disk %q, %v", c.source, data, err)
		}
	}

	cmd := exec.Command(bin, "-store", store, "localhost/disks/c:1", bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("a binary as source: %v, want exit 1", err)
	}
	if msg := stderr.String(); !strings.HasPrefix(msg, "image localhost/disks/c:1: invalid image") || strings.Count(msg, "\n") != 1 {
		t.Errorf("stderr %q, want one line naming the image", msg)
	}
	if err := exec.Command(bin, "only-one-arg").Run(); err == nil {
		t.Error("one argument: exit 0")
	}
}
