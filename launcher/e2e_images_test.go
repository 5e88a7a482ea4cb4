package launcher_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	gcrv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// countingRegistry is go-containerregistry's registry (the Distribution
// API over HTTP) on loopback, counting the blob downloads it serves.
type countingRegistry struct {
	host      string // 127.0.0.1:port
	blobGets  atomic.Int64
	manifests atomic.Int64
}

func newRegistry(t *testing.T) *countingRegistry {
	r := &countingRegistry{}
	h := registry.New()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
			r.blobGets.Add(1)
		}
		if strings.Contains(req.URL.Path, "/manifests/") {
			r.manifests.Add(1)
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	r.host = u.Host
	return r
}

// push pushes img to the registry as repo:tag and returns the reference.
func (r *countingRegistry) push(t *testing.T, repo string, img gcrv1.Image) string {
	t.Helper()
	ref := fmt.Sprintf("%s/%s", r.host, repo)
	tag, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return ref
}

// TestE2EImagesFromRegistry boots the test guest from a loopback registry
// — its kernel and initrd from a kernel-boot image, its disk from a
// containerDisk image — with an image store of its own: the guest sees
// the disk; the VMI's status names the digest; a second VMI with the same
// images pulls nothing; 8 VMIs synced at once pull each image once.
func TestE2EImagesFromRegistry(t *testing.T) {
	store := filepath.Join(testRoot, uniqueName("store"))
	e := newEnvWith(t, func(c *launcher.Config) { c.Layout.ImageStore = store })
	reg := newRegistry(t)
	guest, err := testguest.Image(testguest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const diskSize = 6 << 20
	disk, err := testguest.DiskImage("disk.img", make([]byte, diskSize))
	if err != nil {
		t.Fatal(err)
	}
	kernelRef := reg.push(t, "vmi2libvirt/testguest:v1", guest)
	diskRef := reg.push(t, "vmi2libvirt/data:v1", disk)
	diskDigest, _ := disk.Digest()
	reg.blobGets.Store(0)

	vmiFor := func(name, extra string) *v1.VirtualMachineInstance {
		return decodeVMI(t, fmt.Sprintf(`apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: %s, namespace: %s}
spec:
  terminationGracePeriodSeconds: 0
%s  domain:
    memory: {guest: 128Mi}
    firmware:
      kernelBoot:
        kernelArgs: %s %s
        container: {image: %s, kernelPath: %s, initrdPath: %s}
    devices:
      disks:
      - {name: data, serial: FROM-REGISTRY, disk: {bus: virtio}}
  volumes:
  - {name: data, containerDisk: {image: %s}}
`, name, testNamespace, extra, testguest.KernelArgs, testguest.ActionACPI, kernelRef, testguest.KernelPath, testguest.InitrdPath, diskRef))
	}

	first := vmiFor(uniqueName("e2e-pulled"), "")
	e.sync(t, first)
	pulled := reg.blobGets.Load()
	if pulled == 0 {
		t.Fatal("no blob was pulled from the registry")
	}
	r := e.waitConsole(t, first, bootTimeout)
	if d := r.DiskBySerial("FROM-REGISTRY"); d == nil || d.Size != diskSize {
		t.Errorf("guest sees disk %+v, want FROM-REGISTRY of %d bytes; disks %+v", d, diskSize, r.Disks)
	}
	st, err := e.l.Status(ctxFor(t, time.Minute), first)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.VolumeStatus) != 1 || st.VolumeStatus[0].Name != "data" || st.VolumeStatus[0].Target != "vda" ||
		st.VolumeStatus[0].Message != diskRef+"@"+diskDigest.String() {
		t.Errorf("volume status %+v, want data on vda from %s@%s", st.VolumeStatus, diskRef, diskDigest)
	}

	second := vmiFor(uniqueName("e2e-cached"), "")
	e.sync(t, second)
	if got := reg.blobGets.Load(); got != pulled {
		t.Errorf("a second VMI with the same images pulled %d more blobs", got-pulled)
	}

	// 8 VMIs (started paused: no CPU spent) of two new images at once.
	guest2, err := testguest.DiskImage("disk.img", make([]byte, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	diskRef = reg.push(t, "vmi2libvirt/shared:v1", guest2)
	reg.blobGets.Store(0)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	var herd []*v1.VirtualMachineInstance
	for i := range 8 {
		v := vmiFor(uniqueName(fmt.Sprintf("e2e-herd-%d", i)), "  startStrategy: Paused\n")
		herd = append(herd, v)
		t.Cleanup(func() { _ = e.l.Delete(context.Background(), v) })
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- e.l.Sync(ctxFor(t, 3*time.Minute), v)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	// The new image has 2 blobs (config and layer); the kernel image is
	// already in the store.
	if got := reg.blobGets.Load(); got != 2 {
		t.Errorf("8 VMIs at once made %d blob downloads, want 2 (one pull)", got)
	}

	// Once the 8 are deleted, PruneImages removes their image, and keeps
	// those of the VMIs still defined.
	for _, v := range append(herd, second) {
		if err := e.l.Delete(ctxFor(t, time.Minute), v); err != nil {
			t.Fatal(err)
		}
	}
	shared, err := guest2.Digest()
	if err != nil {
		t.Fatal(err)
	}
	removed, err := e.l.PruneImages(ctxFor(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != shared.String() {
		t.Errorf("PruneImages removed %v, want only %s", removed, shared)
	}
	if st, err := e.l.Status(ctxFor(t, time.Minute), first); err != nil || st.Phase != v1.Running {
		t.Errorf("the VMI whose images were kept: %s, %v", st.Phase, err)
	}
}

// TestE2EImageErrors: an image the registry does not have is a host not
// ready (retry later: someone may push it), one that has no disk where
// KubeVirt looks is invalid, and an imagePullSecret the launcher has no
// credentials for is refused with its path; none leaves anything behind.
func TestE2EImageErrors(t *testing.T) {
	store := filepath.Join(testRoot, uniqueName("store-errors"))
	e := newEnvWith(t, func(c *launcher.Config) { c.Layout.ImageStore = store })
	reg := newRegistry(t)
	guest, err := testguest.Image(testguest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	noDisk := reg.push(t, "vmi2libvirt/nodisk:v1", guest) // a kernel-boot image, no /disk/
	for _, c := range []struct {
		name, volume, class, path string
	}{
		{"unknown tag", fmt.Sprintf("{image: %s/vmi2libvirt/nodisk:v2}", reg.host), "ErrHostNotReady", "spec.volumes[0].containerDisk.image"},
		{"no disk in the image", "{image: " + noDisk + "}", "ErrInvalid", "spec.volumes[0].containerDisk.image"},
		{"unmapped pull secret", "{image: " + noDisk + ", imagePullSecret: regcred}", "ErrInvalid", "spec.volumes[0].containerDisk.imagePullSecret"},
	} {
		vmi := decodeVMI(t, fmt.Sprintf(`apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: %s, namespace: %s}
spec:
  domain:
    memory: {guest: 128Mi}
    devices:
      disks:
      - {name: root, disk: {bus: virtio}}
  volumes:
  - {name: root, containerDisk: %s}
`, uniqueName("e2e-imgerr"), testNamespace, c.volume))
		err := e.l.Sync(ctxFor(t, time.Minute), vmi)
		t.Logf("%s: %v", c.name, err)
		if got := classOf(err); got != c.class {
			t.Errorf("%s: %s, want %s", c.name, got, c.class)
		}
		if !strings.Contains(fmt.Sprint(err), c.path) {
			t.Errorf("%s: the error does not name %s", c.name, c.path)
		}
		if !lookupGone(t, e.conn, domainName(vmi)) {
			t.Errorf("%s: a domain was defined", c.name)
		}
	}
	var ie *launcher.InvalidError
	if err := e.l.Sync(ctxFor(t, time.Minute), nil); err == nil || errors.As(err, &ie) {
		t.Errorf("Sync(nil) = %v", err)
	}
}
