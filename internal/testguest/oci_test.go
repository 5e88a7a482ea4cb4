package testguest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	k8sv1 "k8s.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/imagestore"
)

// TestImageImports builds the test guest as an OCI layout, imports it into
// an image store, and finds there the kernel and initrd that Build
// installs the old way, byte for byte; building twice gives one digest.
func TestImageImports(t *testing.T) {
	kernelTree(t)
	if _, err := os.Stat(DefaultBusybox); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("busybox missing under CI: %v", err)
		}
		t.Skip("no busybox-static")
	}
	dir := filepath.Join(t.TempDir(), "layout")
	img, err := WriteLayout(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := Image(Options{})
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds: %s and %s", d1, d2)
	}

	store, err := imagestore.New(imagestore.Config{Root: filepath.Join(t.TempDir(), "images")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := store.Import(context.Background(), OCIRef, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != d1.String() {
		t.Errorf("imported %s, want %s", got.Digest, d1)
	}
	// Pull policy: a VMI naming OCIRef defaults to IfNotPresent.
	if p := imagestore.DefaultPullPolicy(OCIRef); p != k8sv1.PullIfNotPresent {
		t.Errorf("pull policy of %s: %s", OCIRef, p)
	}
	resolved, err := store.Resolve(context.Background(), imagestore.Request{Reference: OCIRef})
	if err != nil {
		t.Fatal(err)
	}

	old := t.TempDir()
	if _, err := Build(old); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{KernelPath, InitrdPath} {
		host, err := resolved.HostPath(p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(old, "localhost%2Fvmi2libvirt%2Ftestguest:latest", p))
		if err != nil {
			t.Fatal(err)
		}
		if data, err := os.ReadFile(host); err != nil || !bytes.Equal(data, want) {
			t.Errorf("%s differs from Build's (%d bytes, want %d)", p, len(data), len(want))
		}
	}
}
