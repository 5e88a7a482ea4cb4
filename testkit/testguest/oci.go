package testguest

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	k8sv1 "k8s.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/imagestore"
)

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
	kernel, initrd, err := kernelAndInitramfs(opts.KernelTree, opts.Busybox, Modules)
	if err != nil {
		return nil, err
	}
	data, err := bootLayer(map[string][]byte{KernelPath: kernel, InitrdPath: initrd})
	if err != nil {
		return nil, err
	}
	return singleLayerImage(data)
}

// singleLayerImage is an OCI image for linux/amd64 of one uncompressed
// tar layer.
func singleLayerImage(data []byte) (v1.Image, error) {
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

// DiskImage builds a containerDisk image as KubeVirt's contract has it:
// one layer holding the disk file disk (raw or qcow2) as /disk/<name>,
// readable by QEMU (0644), for linux/amd64.
func DiskImage(name string, disk []byte) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "disk/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "disk/" + name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(disk))}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(disk); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return singleLayerImage(buf.Bytes())
}

// installImage imports img into the image store at storeRoot under
// reference (ImportImage), unless an image of the same digest is there
// under it already: that one is returned, left alone.
func installImage(storeRoot, reference string, img v1.Image) (*imagestore.Image, error) {
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	store, err := imagestore.New(imagestore.Config{Root: storeRoot})
	if err != nil {
		return nil, err
	}
	if have, err := store.Resolve(context.Background(), imagestore.Request{Reference: reference, PullPolicy: k8sv1.PullNever}); err == nil && have.Digest == digest.String() {
		return have, nil
	}
	return ImportImage(storeRoot, reference, img)
}

// ImportImage imports img into the image store at storeRoot under
// reference, through an OCI layout folder, as an air-gapped host imports
// an image.
func ImportImage(storeRoot, reference string, img v1.Image) (*imagestore.Image, error) {
	store, err := imagestore.New(imagestore.Config{Root: storeRoot})
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "testguest-layout-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return nil, err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": reference})); err != nil {
		return nil, err
	}
	return store.Import(context.Background(), reference, dir)
}
