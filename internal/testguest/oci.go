package testguest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// OCIRef is the reference the test guest's OCI image is imported under
// (imagestore.Store.Import). Its tag is not "latest": a VMI's image whose
// tag is latest defaults to pull policy Always, which asks a registry that
// an imported image never came from.
const OCIRef = "localhost/vmi2libvirt/testguest:v1"

// Image builds the test guest as an OCI image for linux/amd64: one layer
// holding KernelPath and InitrdPath (mode 0644, owned by root, time zero),
// so the same kernel tree and busybox give the same digest.
func Image(opts Options) (v1.Image, error) {
	if opts.KernelTree == "" {
		opts.KernelTree = DefaultKernelTree
	}
	if opts.Busybox == "" {
		opts.Busybox = DefaultBusybox
	}
	version, err := kernelVersion(opts.KernelTree)
	if err != nil {
		return nil, err
	}
	kernel, err := os.ReadFile(filepath.Join(opts.KernelTree, "boot", "vmlinuz-"+version))
	if err != nil {
		return nil, fmt.Errorf("test guest kernel: %w", err)
	}
	initrd, err := Initramfs(opts.KernelTree, version, opts.Busybox)
	if err != nil {
		return nil, err
	}
	data, err := bootLayer(map[string][]byte{KernelPath: kernel, InitrdPath: initrd})
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(mutate.ConfigMediaType(empty.Image, types.OCIConfigJSON), types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	return mutate.ConfigFile(img, cfg)
}

// WriteLayout builds the test guest's image (Image) into an OCI layout
// folder dir, named by OCIRef's tag, for imagestore.Store.Import; it
// returns the image.
func WriteLayout(dir string, opts Options) (v1.Image, error) {
	img, err := Image(opts)
	if err != nil {
		return nil, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return nil, err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "v1"})); err != nil {
		return nil, err
	}
	return img, nil
}

// bootLayer is an uncompressed tar of the files (absolute paths in the
// image) and their folders.
func bootLayer(files map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	done := map[string]bool{}
	for _, name := range []string{KernelPath, InitrdPath} {
		rel := name[1:]
		if d := path.Dir(rel); !done[d] {
			done[d] = true
			if err := tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
				return nil, err
			}
		}
		data := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: rel, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
