package imagestore

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
)

func TestPrune(t *testing.T) {
	reg := newRegistry(t)
	keepRef, keepD := reg.push(t, "disks/keep:1", imageOf(t, layerOf(t, file("disk/d", "keep"))))
	dropRef, dropD := reg.push(t, "disks/drop:1", imageOf(t, layerOf(t, file("disk/d", "drop"))))
	s := newStore(t, Config{})
	ctx := context.Background()
	for _, r := range []string{keepRef, dropRef} {
		if _, err := s.Resolve(ctx, Request{Reference: r}); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := s.Prune(ctx, func(d string) bool { return d == keepD.String() })
	if err != nil || !slices.Equal(removed, []string{dropD.String()}) {
		t.Fatalf("Prune = %v, %v; want [%s]", removed, err, dropD)
	}
	if _, err := s.Resolve(ctx, Request{Reference: keepRef, PullPolicy: k8sv1.PullNever}); err != nil {
		t.Errorf("kept image: %v", err)
	}
	if _, err := s.Resolve(ctx, Request{Reference: dropRef, PullPolicy: k8sv1.PullNever}); !errors.Is(err, ErrNotPresent) {
		t.Errorf("pruned image: %v, want ErrNotPresent", err)
	}
	got := storeFiles(t, s)
	for _, f := range got {
		if strings.Contains(f, dropD.Hex) || strings.HasPrefix(f, "store/.tmp/") {
			t.Errorf("left after Prune: %s", f)
		}
	}
	refs, _ := os.ReadDir(filepath.Join(s.root, ".refs"))
	if len(refs) != 1 {
		t.Errorf("%d reference records, want the kept one", len(refs))
	}
}

// TestPruneDuringPull prunes everything while a pull is half way: the
// pull's temporary folder is left alone and the pull completes.
func TestPruneDuringPull(t *testing.T) {
	reg := newRegistry(t)
	layer := layerOf(t, file("disk/disk.img", diskBytes(12, 1<<20)))
	ref, d := reg.push(t, "disks/slow:1", imageOf(t, layer))
	ld := must(t)(layer.Digest()).String()
	inBlob, release := make(chan struct{}), make(chan struct{})
	reg.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+ld) {
			close(inBlob)
			<-release
		}
		return false
	})
	s := newStore(t, Config{})
	type result struct {
		img *Image
		err error
	}
	done := make(chan result)
	go func() {
		img, err := s.Resolve(context.Background(), Request{Reference: ref})
		done <- result{img, err}
	}()
	<-inBlob
	if removed, err := s.Prune(context.Background(), func(string) bool { return false }); err != nil || len(removed) != 0 {
		t.Errorf("Prune during the pull = %v, %v", removed, err)
	}
	tmps, _ := os.ReadDir(filepath.Join(s.root, ".tmp"))
	if len(tmps) != 1 {
		t.Errorf("temporary folders during the pull: %v, want the pull's", tmps)
	}
	close(release)
	r := <-done
	if r.err != nil || r.img.Digest != d.String() {
		t.Fatalf("pull = %v, %v", r.img, r.err)
	}
	if _, err := os.Stat(filepath.Join(r.img.Dir, "disk/disk.img")); err != nil {
		t.Error(err)
	}
}

// TestStaleTemps: New removes the temporary folders of pulls cut off
// earlier, but not those of pulls alive (locked) or just begun.
func TestStaleTemps(t *testing.T) {
	s := newStore(t, Config{})
	live, err := s.newTemp()
	if err != nil {
		t.Fatal(err)
	}
	defer live.remove()
	old := time.Now().Add(-time.Hour)
	stale := filepath.Join(s.root, ".tmp", "pull-killed")
	fresh := filepath.Join(s.root, ".tmp", "pull-just-begun")
	for _, p := range []string{stale, fresh} {
		if err := os.MkdirAll(filepath.Join(p, "rootfs", "disk"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{stale, live.path} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := New(Config{Root: s.root}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{stale: false, fresh: true, live.path: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}

func TestNewNeedsAbsoluteRoot(t *testing.T) {
	for _, root := range []string{"", "relative/store"} {
		if _, err := New(Config{Root: root}); err == nil {
			t.Errorf("New(%q) succeeded", root)
		}
	}
}
