package testguest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	k8sv1 "k8s.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/imagestore"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
)

// TestInstallImportsTheImage builds the test guest as an OCI image,
// installs it into an image store through an OCI layout and Import, and
// finds there the kernel of the kernel tree and the initramfs Initramfs
// builds, byte for byte; building twice gives one digest, and installing
// again leaves the store alone.
func TestInstallImportsTheImage(t *testing.T) {
	root := kernelTree(t)
	hosttest.Files(t, DefaultBusybox)
	img, err := Image(Options{})
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

	storeRoot := filepath.Join(t.TempDir(), "images")
	got, err := Install(storeRoot, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != d1.String() {
		t.Errorf("imported %s, want %s", got.Digest, d1)
	}
	// A VMI naming Ref defaults to pull policy IfNotPresent: it runs from
	// the imported image without asking a registry.
	if p := imagestore.DefaultPullPolicy(Ref); p != k8sv1.PullIfNotPresent {
		t.Errorf("pull policy of %s: %s", Ref, p)
	}
	store, err := imagestore.New(imagestore.Config{Root: storeRoot})
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := store.Resolve(context.Background(), imagestore.Request{Reference: Ref})
	if err != nil {
		t.Fatal(err)
	}
	version, err := kernelVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	wantKernel, err := os.ReadFile(filepath.Join(root, "boot", "vmlinuz-"+version))
	if err != nil {
		t.Fatal(err)
	}
	wantInitrd, err := Initramfs(root, version, DefaultBusybox)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string][]byte{KernelPath: wantKernel, InitrdPath: wantInitrd} {
		host, err := resolved.HostPath(p)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(host)
		if err != nil || !bytes.Equal(data, want) {
			t.Errorf("%s: %d bytes, want %d", p, len(data), len(want))
		}
		if st, err := os.Stat(host); err != nil || st.Mode().Perm()&0o444 != 0o444 {
			t.Errorf("%s: QEMU cannot read it: %v %v", p, st.Mode(), err)
		}
	}
	names := map[string]bool{}
	for _, e := range readCpio(t, wantInitrd) {
		names[e.name] = true
	}
	for _, want := range []string{"init", "bin/busybox", "dev/console", "etc/modules.load", "lib/modules/virtio_blk.ko", "lib/modules/isofs.ko", "lib/modules/button.ko"} {
		if !names[want] {
			t.Errorf("initrd lacks %s", want)
		}
	}
	// Installing again finds the same digest and imports nothing.
	dir, _ := os.ReadDir(filepath.Join(storeRoot, "sha256"))
	if again, err := Install(storeRoot, Options{}); err != nil || again.Digest != got.Digest {
		t.Errorf("second Install: %v, %v", again, err)
	}
	if dir2, _ := os.ReadDir(filepath.Join(storeRoot, "sha256")); len(dir2) != len(dir) {
		t.Errorf("second Install changed the store: %d images, then %d", len(dir), len(dir2))
	}
}
