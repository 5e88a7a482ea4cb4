package imagestore

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	k8sv1 "k8s.io/api/core/v1"
)

// diskBytes is a disk image's content: pseudo-random bytes with runs of
// zeros between them (which the store writes as holes).
func diskBytes(seed uint64, size int) string {
	b := make([]byte, size)
	r := rand.New(rand.NewPCG(seed, 0))
	for i := range b {
		if (i/(256<<10))%2 == 0 { // every other 256 KiB block is zeros
			b[i] = byte(r.Uint32())
		}
	}
	return string(b)
}

func TestPullContainerDisk(t *testing.T) {
	reg := newRegistry(t)
	disk := diskBytes(1, 3<<20+17)
	ref, digest := reg.push(t, "disks/fedora:40", imageOf(t, layerOf(t, dir("disk/"), file("disk/fedora.qcow2", disk))))
	s := newStore(t, Config{})

	img, err := s.Resolve(context.Background(), Request{Reference: ref})
	if err != nil {
		t.Fatal(err)
	}
	if img.Digest != digest.String() || img.Reference != ref {
		t.Errorf("image %s %s, want %s %s", img.Reference, img.Digest, ref, digest)
	}
	if want := filepath.Join(s.root, "sha256", digest.Hex, "rootfs"); img.Dir != want {
		t.Errorf("Dir = %s, want %s", img.Dir, want)
	}
	if img.Size != int64(len(disk)) {
		t.Errorf("Size = %d, want %d", img.Size, len(disk))
	}
	p, err := img.DiskPath("")
	if err != nil || p != "/disk/fedora.qcow2" {
		t.Fatalf("DiskPath = %q, %v", p, err)
	}
	host, err := img.HostPath(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, host); got != disk {
		t.Fatalf("disk differs from the one pushed (%d bytes, want %d)", len(got), len(disk))
	}
	st, err := os.Stat(host)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("disk mode %v, want 0644", st.Mode())
	}
	// QEMU, another user, must reach the disk.
	for _, d := range []string{filepath.Dir(host), img.Dir, filepath.Dir(img.Dir), filepath.Join(s.root, "sha256")} {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o755 {
			t.Errorf("%s: %v, %v; want mode 0755", d, st.Mode(), err)
		}
	}

	// A second resolution under IfNotPresent does not ask the registry.
	if reg.requests.Load() == 0 {
		t.Fatal("the first pull made no request")
	}
	reg.reset()
	again, err := s.Resolve(context.Background(), Request{Reference: ref, PullPolicy: k8sv1.PullIfNotPresent})
	if err != nil {
		t.Fatal(err)
	}
	if again.Dir != img.Dir || reg.requests.Load() != 0 {
		t.Errorf("second pull: %s after %d requests, want %s after none", again.Dir, reg.requests.Load(), img.Dir)
	}
	// Nor does Never; nor a digest reference of the stored image.
	for _, r := range []Request{{Reference: ref, PullPolicy: k8sv1.PullNever}, {Reference: reg.Host + "/disks/fedora@" + digest.String()}} {
		if got, err := s.Resolve(context.Background(), r); err != nil || got.Dir != img.Dir {
			t.Errorf("Resolve(%+v) = %v, %v", r, got, err)
		}
	}
	if n := reg.requests.Load(); n != 0 {
		t.Errorf("%d requests for images in the store", n)
	}
}

func TestPullKernelBoot(t *testing.T) {
	reg := newRegistry(t)
	kernel, initrd := diskBytes(2, 1<<20), diskBytes(3, 700<<10)
	ref, _ := reg.push(t, "boot/guest:1", imageOf(t,
		layerOf(t, file("boot/vmlinuz-6.1", kernel), symlink("boot/vmlinuz", "vmlinuz-6.1")),
		layerOf(t, file("boot/initrd.img", initrd)),
	))
	s := newStore(t, Config{})
	img, err := s.Resolve(context.Background(), Request{Reference: ref})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"/boot/vmlinuz": kernel, "boot/initrd.img": initrd} {
		host, err := img.HostPath(p)
		if err != nil {
			t.Fatal(err)
		}
		if readFile(t, host) != want {
			t.Errorf("%s differs from the one pushed", p)
		}
	}
	if _, err := img.HostPath("/boot/missing"); !errors.Is(err, ErrNoFile) {
		t.Errorf("HostPath(missing) = %v, want ErrNoFile", err)
	}
	if _, err := img.HostPath("/../../boot"); !errors.Is(err, ErrNoFile) {
		t.Errorf("HostPath(a folder) = %v, want ErrNoFile", err)
	}
	if _, err := img.DiskPath(""); !errors.Is(err, ErrNoDisk) {
		t.Errorf("DiskPath of a kernel-boot image = %v, want ErrNoDisk", err)
	}
}

func TestPullPolicies(t *testing.T) {
	reg := newRegistry(t)
	first := imageOf(t, layerOf(t, file("disk/a.img", "first")))
	second := imageOf(t, layerOf(t, file("disk/a.img", "second")))
	ref, d1 := reg.push(t, "disks/a:1", first)
	s := newStore(t, Config{})
	ctx := context.Background()

	if _, err := s.Resolve(ctx, Request{Reference: ref, PullPolicy: k8sv1.PullNever}); !errors.Is(err, ErrNotPresent) || Retryable(err) {
		t.Fatalf("Never before any pull = %v, want ErrNotPresent", err)
	}
	if n := reg.requests.Load(); n != 0 {
		t.Errorf("Never made %d requests", n)
	}
	if img, err := s.Resolve(ctx, Request{Reference: ref, PullPolicy: k8sv1.PullAlways}); err != nil || img.Digest != d1.String() {
		t.Fatalf("Always = %v, %v", img, err)
	}

	// The tag moves: IfNotPresent keeps the stored image, Always follows.
	_, d2 := reg.push(t, "disks/a:1", second)
	if img, err := s.Resolve(ctx, Request{Reference: ref, PullPolicy: k8sv1.PullIfNotPresent}); err != nil || img.Digest != d1.String() {
		t.Errorf("IfNotPresent after the tag moved = %v, %v; want the stored %s", img, err, d1)
	}
	img, err := s.Resolve(ctx, Request{Reference: ref, PullPolicy: k8sv1.PullAlways})
	if err != nil || img.Digest != d2.String() {
		t.Fatalf("Always after the tag moved = %v, %v; want %s", img, err, d2)
	}
	if got := readFile(t, filepath.Join(img.Dir, "disk/a.img")); got != "second" {
		t.Errorf("disk = %q", got)
	}
	// Always asks for the manifest again but fetches no blob it has.
	reg.reset()
	if _, err := s.Resolve(ctx, Request{Reference: ref, PullPolicy: k8sv1.PullAlways}); err != nil {
		t.Fatal(err)
	}
	if reg.requests.Load() == 0 || reg.blobGets.Load() != 0 {
		t.Errorf("Always of a stored digest: %d requests, %d blob GETs; want some, none", reg.requests.Load(), reg.blobGets.Load())
	}
	// Now IfNotPresent follows the last resolution.
	if img, err := s.Resolve(ctx, Request{Reference: ref}); err != nil || img.Digest != d2.String() {
		t.Errorf("IfNotPresent = %v, %v; want %s", img, err, d2)
	}
	if _, err := s.Resolve(ctx, Request{Reference: ref, PullPolicy: "Sometimes"}); !errors.Is(err, ErrBadPullPolicy) {
		t.Errorf("pull policy Sometimes = %v", err)
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	for ref, want := range map[string]k8sv1.PullPolicy{
		"quay.io/x/fedora":                 k8sv1.PullAlways,
		"quay.io/x/fedora:latest":          k8sv1.PullAlways,
		"localhost:5000/fedora":            k8sv1.PullAlways,
		"quay.io/x/fedora:40":              k8sv1.PullIfNotPresent,
		"quay.io/x/fedora@sha256:" + hex64: k8sv1.PullIfNotPresent,
	} {
		if got := DefaultPullPolicy(ref); got != want {
			t.Errorf("DefaultPullPolicy(%q) = %s, want %s", ref, got, want)
		}
	}
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestConcurrentResolvesPullOnce(t *testing.T) {
	reg := newRegistry(t)
	img := imageOf(t, layerOf(t, file("disk/disk.img", diskBytes(4, 2<<20))), layerOf(t, file("etc/motd", "hi")))
	ref, d := reg.push(t, "disks/shared:1", img)
	s := newStore(t, Config{})

	var wg sync.WaitGroup
	got := make([]string, 8)
	errs := make([]error, 8)
	for i := range 8 {
		wg.Go(func() {
			im, err := s.Resolve(context.Background(), Request{Reference: ref})
			if err == nil {
				got[i] = im.Digest
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := range 8 {
		if errs[i] != nil || got[i] != d.String() {
			t.Errorf("caller %d: %s, %v", i, got[i], errs[i])
		}
	}
	// One config and two layers: three blob GETs for one pull.
	if n := reg.blobGets.Load(); n != 3 {
		t.Errorf("%d blob GETs, want 3 (one pull)", n)
	}
}

func TestPlatforms(t *testing.T) {
	reg := newRegistry(t)
	amd := imageOf(t, layerOf(t, file("disk/disk.img", "amd64")))
	arm := imageFor(t, "arm64", layerOf(t, file("disk/disk.img", "arm64")))
	multi, _ := reg.pushIndex(t, "multi:1", indexOf(t, map[string]v1.Image{"arm64": arm, "amd64": amd}))
	armOnly, _ := reg.pushIndex(t, "armonly:1", indexOf(t, map[string]v1.Image{"arm64": arm}))
	armImage, _ := reg.push(t, "armimage:1", arm)
	s := newStore(t, Config{})
	ctx := context.Background()

	img, err := s.Resolve(ctx, Request{Reference: multi})
	if err != nil {
		t.Fatal(err)
	}
	if d := must(t)(amd.Digest()); img.Digest != d.String() || readFile(t, filepath.Join(img.Dir, "disk/disk.img")) != "amd64" {
		t.Errorf("index: got %s, want the amd64 image %s", img.Digest, d)
	}
	for _, ref := range []string{armOnly, armImage} {
		if _, err := s.Resolve(ctx, Request{Reference: ref}); !errors.Is(err, ErrWrongPlatform) {
			t.Errorf("%s: %v, want ErrWrongPlatform", ref, err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(s.root, "sha256"))
	if err != nil || len(entries) != 1 || entries[0].Name() != must(t)(amd.Digest()).Hex {
		t.Errorf("store holds %v, %v; want only the amd64 image", entries, err)
	}
}
