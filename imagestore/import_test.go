package imagestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	k8sv1 "k8s.io/api/core/v1"
)

// TestImportLayout imports from OCI layouts built with
// go-containerregistry: one image, several images told apart by their
// ref.name annotations, several platforms of one image.
func TestImportLayout(t *testing.T) {
	disk := diskBytes(9, 1<<20)
	img := imageOf(t, layerOf(t, file("disk/disk.qcow2", disk)))
	other := imageOf(t, layerOf(t, file("disk/disk.qcow2", "other")))
	arm := imageFor(t, "arm64", layerOf(t, file("disk/disk.qcow2", "arm")))

	single := filepath.Join(t.TempDir(), "single")
	p, err := layout.Write(single, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	named := filepath.Join(t.TempDir(), "named")
	if p, err = layout.Write(named, empty.Index); err != nil {
		t.Fatal(err)
	}
	for tag, im := range map[string]v1.Image{"1": other, "2": img} {
		if err := p.AppendImage(im, layout.WithAnnotations(map[string]string{ociRefName: tag})); err != nil {
			t.Fatal(err)
		}
	}
	platforms := filepath.Join(t.TempDir(), "platforms")
	if _, err = layout.Write(platforms, indexOf(t, map[string]v1.Image{"arm64": arm, "amd64": img})); err != nil {
		t.Fatal(err)
	}
	armOnly := filepath.Join(t.TempDir(), "arm")
	if p, err = layout.Write(armOnly, empty.Index); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(arm, layout.WithPlatform(v1.Platform{OS: "linux", Architecture: "arm64"})); err != nil {
		t.Fatal(err)
	}

	d := must(t)(img.Digest())
	for _, c := range []struct{ name, ref, from string }{
		{"one image", "localhost/vmi2libvirt/disk:1", single},
		{"by ref.name", "localhost/vmi2libvirt/disk:2", named},
		{"index of platforms", "localhost/vmi2libvirt/disk:3", platforms},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, Config{})
			got, err := s.Import(context.Background(), c.ref, c.from)
			if err != nil {
				t.Fatal(err)
			}
			if got.Digest != d.String() || readFile(t, filepath.Join(got.Dir, "disk/disk.qcow2")) != disk {
				t.Errorf("imported %s, want %s", got.Digest, d)
			}
			// The reference now resolves without any registry.
			again, err := s.Resolve(context.Background(), Request{Reference: c.ref, PullPolicy: k8sv1.PullNever})
			if err != nil || again.Digest != d.String() {
				t.Errorf("Resolve after import = %v, %v", again, err)
			}
		})
	}
	s := newStore(t, Config{})
	if _, err := s.Import(context.Background(), "localhost/x:3", named); !errors.Is(err, ErrBadImage) {
		t.Errorf("several images, none named: %v, want an error", err)
	}
	if _, err := s.Import(context.Background(), "localhost/x:1", armOnly); !errors.Is(err, ErrWrongPlatform) {
		t.Errorf("arm64 layout: %v, want ErrWrongPlatform", err)
	}
	if _, err := s.Import(context.Background(), "localhost/x:1", filepath.Join(t.TempDir(), "nothing")); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing source: %v, want ErrNotFound", err)
	}
	if _, err := s.Import(context.Background(), "localhost/x:1", t.TempDir()); !errors.Is(err, ErrBadImage) {
		t.Errorf("empty folder: %v, want ErrBadImage", err)
	}
	if got := storeFiles(t, s); !slices.Equal(got, emptyStore) {
		t.Errorf("store after refused imports: %v", got)
	}
}

// TestImportDockerArchive imports `docker save`-style tarballs written by
// go-containerregistry: one image, and two told apart by their tags.
func TestImportDockerArchive(t *testing.T) {
	kernel := diskBytes(10, 512<<10)
	img := imageOf(t, layerOf(t, file("boot/vmlinuz", kernel)), layerOf(t, file("boot/initrd.img", "initrd")))
	other := imageOf(t, layerOf(t, file("boot/vmlinuz", "other")))
	dir := t.TempDir()
	one := filepath.Join(dir, "one.tar")
	tag, err := name.NewTag("example.org/guest:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(one, tag, img); err != nil {
		t.Fatal(err)
	}
	two := filepath.Join(dir, "two.tar")
	otherTag, _ := name.NewTag("example.org/other:1")
	if err := tarball.MultiWriteToFile(two, map[name.Tag]v1.Image{tag: img, otherTag: other}); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct{ ref, from string }{
		{"localhost/vmi2libvirt/testguest:1", one}, // under another name than saved
		{"example.org/guest:1", two},
	} {
		s := newStore(t, Config{})
		got, err := s.Import(context.Background(), c.ref, c.from)
		if err != nil {
			t.Fatal(err)
		}
		host, err := got.HostPath("/boot/vmlinuz")
		if err != nil || readFile(t, host) != kernel {
			t.Errorf("%s: kernel %v", c.from, err)
		}
		if got.Digest != must(t)(img.Digest()).String() {
			t.Errorf("%s: digest %s, want the image's %s", c.from, got.Digest, must(t)(img.Digest()))
		}
		if _, err := s.Resolve(context.Background(), Request{Reference: c.ref, PullPolicy: k8sv1.PullIfNotPresent}); err != nil {
			t.Errorf("Resolve after import: %v", err)
		}
	}
	s := newStore(t, Config{})
	if _, err := s.Import(context.Background(), "example.org/third:1", two); !errors.Is(err, ErrBadImage) {
		t.Errorf("tag not in the tarball: %v, want ErrBadImage", err)
	}
	junk := filepath.Join(dir, "junk.tar")
	if err := os.WriteFile(junk, []byte("not a tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(context.Background(), "example.org/guest:1", junk); !errors.Is(err, ErrBadImage) {
		t.Errorf("junk: %v, want ErrBadImage", err)
	}
	if got := storeFiles(t, s); !slices.Equal(got, emptyStore) {
		t.Errorf("store after refused imports: %v", got)
	}
}

// TestImportCorruptLayout changes a layer blob of a layout: its digest no
// longer matches.
func TestImportCorruptLayout(t *testing.T) {
	layer := layerOf(t, file("disk/disk.img", diskBytes(11, 64<<10)))
	img, err := mutate.AppendLayers(imageOf(t), layer)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(dir, "blobs", "sha256", must(t)(layer.Digest()).Hex)
	data, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x80
	if err := os.WriteFile(blob, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, Config{})
	if _, err := s.Import(context.Background(), "localhost/x:1", dir); !errors.Is(err, ErrDigestMismatch) {
		t.Errorf("corrupt blob: %v, want ErrDigestMismatch", err)
	}
	if got := storeFiles(t, s); !slices.Equal(got, emptyStore) {
		t.Errorf("store: %v", got)
	}
}

// TestImportArchiveDiffID imports a docker save tarball whose config names
// another diff ID than its layer has.
func TestImportArchiveDiffID(t *testing.T) {
	img := imageOf(t, layerOf(t, file("disk/disk.img", "disk")))
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.RootFS.DiffIDs[0] = v1.Hash{Algorithm: "sha256", Hex: hex64}
	lying, err := mutate.ConfigFile(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "lying.tar")
	tag, _ := name.NewTag("example.org/lying:1")
	if err := tarball.WriteToFile(file, tag, lying); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, Config{})
	if _, err := s.Import(context.Background(), "example.org/lying:1", file); !errors.Is(err, ErrDigestMismatch) || !strings.Contains(err.Error(), "want sha256:"+hex64) {
		t.Errorf("got %v, want ErrDigestMismatch", err)
	}
	if got := storeFiles(t, s); !slices.Equal(got, emptyStore) {
		t.Errorf("store: %v", got)
	}
}
