package imagestore_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	k8sv1 "k8s.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/imagestore"
)

// Example pulls a containerDisk image from a registry on loopback and
// finds its disk as KubeVirt does.
func Example() {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	ref := strings.TrimPrefix(reg.URL, "http://") + "/containerdisks/cirros:0.6"
	if err := pushDisk(ref, "cirros.qcow2", "QFI\xfb disk"); err != nil {
		log.Fatal(err)
	}

	root, _ := os.MkdirTemp("", "images-")
	defer os.RemoveAll(root)
	store, err := imagestore.New(imagestore.Config{Root: root})
	if err != nil {
		log.Fatal(err)
	}
	img, err := store.Resolve(context.Background(), imagestore.Request{Reference: ref, PullPolicy: k8sv1.PullIfNotPresent})
	if err != nil {
		log.Fatal(err)
	}
	disk, err := img.DiskPath("") // the containerDisk's path, here unset
	if err != nil {
		log.Fatal(err)
	}
	file, err := img.HostPath(disk)
	if err != nil {
		log.Fatal(err)
	}
	rel, _ := filepath.Rel(root, file)
	fmt.Println(disk)
	fmt.Println(strings.Replace(rel, img.Digest[len("sha256:"):], "<hex>", 1))
	// Output:
	// /disk/cirros.qcow2
	// sha256/<hex>/rootfs/disk/cirros.qcow2
}

// ExampleRetryable sorts a store's errors the way a launcher reports them:
// which image, permanent or not.
func ExampleRetryable() {
	root, _ := os.MkdirTemp("", "images-")
	defer os.RemoveAll(root)
	store, err := imagestore.New(imagestore.Config{Root: root})
	if err != nil {
		log.Fatal(err)
	}
	_, err = store.Resolve(context.Background(), imagestore.Request{Reference: "quay.io/containerdisks/fedora:40", PullPolicy: k8sv1.PullNever})
	var e *imagestore.Error
	if errors.As(err, &e) {
		fmt.Println("image:", e.Image)
		fmt.Println("not present:", errors.Is(err, imagestore.ErrNotPresent))
		fmt.Println("retry later:", imagestore.Retryable(err))
	}
	// Output:
	// image: quay.io/containerdisks/fedora:40
	// not present: true
	// retry later: false
}

// pushDisk pushes an image holding one file under /disk/.
func pushDisk(ref, file, content string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "disk/" + file, Mode: 0o644, Size: int64(len(content))}); err != nil {
		return err
	}
	if _, err := io.WriteString(tw, content); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return err
	}
	return remote.Write(r, img)
}
