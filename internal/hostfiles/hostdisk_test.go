package hostfiles

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestHostDiskSymlinks: a hostDisk path under an allowed folder that leads
// out of it through a symbolic link (an existing file, a folder of a file
// to create, a dangling link) is refused with a field error on its path
// and nothing is created; links that stay inside, and an allowed folder
// that is itself a link, are fine.
func TestHostDiskSymlinks(t *testing.T) {
	layout, sources := testLayout(t)
	root := t.TempDir()
	allowed := filepath.Join(root, "allowed")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{allowed, outside, filepath.Join(allowed, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.img"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(allowed, "sub", "ok.img"), []byte("ok"), 0o600); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"file-out":  filepath.Join(outside, "secret.img"),
		"dir-out":   outside,
		"dangling":  filepath.Join(outside, "new.img"),
		"file-in":   filepath.Join(allowed, "sub", "ok.img"),
		"dir-in":    filepath.Join(allowed, "sub"),
		"rel-out":   "../outside/secret.img",
		"rel-in":    "sub/ok.img",
		"loop":      filepath.Join(allowed, "loop"),
		"parent-up": "..",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(allowed, name)); err != nil {
			t.Fatal(err)
		}
	}
	allowedLink := filepath.Join(root, "allowed-link")
	if err := os.Symlink(allowed, allowedLink); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		allow, path, typ string
		ok               bool
	}{
		{allowed, "file-out", "Disk", false},
		{allowed, "dir-out/secret.img", "Disk", false},
		{allowed, "dir-out/new.img", "DiskOrCreate", false},
		{allowed, "dangling", "DiskOrCreate", false},
		{allowed, "rel-out", "Disk", false},
		{allowed, "loop", "Disk", false},
		{allowed, "parent-up/outside/secret.img", "Disk", false},
		{allowed, "file-in", "Disk", true},
		{allowed, "rel-in", "Disk", true},
		{allowed, "dir-in/new.img", "DiskOrCreate", true},
		{allowed, "sub/ok.img", "Disk", true},
		{allowedLink, "sub/ok.img", "Disk", true},
		{allowedLink, "file-out", "Disk", false},
	}
	for _, c := range cases {
		layout.HostDiskAllow = []string{c.allow}
		p := filepath.Join(c.allow, c.path)
		capacity := "" // KubeVirt allows a capacity with DiskOrCreate only
		if c.typ == "DiskOrCreate" {
			capacity = ", capacity: 1Mi"
		}
		vmi := oneDiskVMI(t, "hd", `hostDisk: {path: `+p+`, type: `+c.typ+capacity+`}`)
		err := prepareArtifacts(context.Background(), vmi, layout, sources)
		if c.ok {
			if err != nil {
				t.Errorf("%s: %v", c.path, err)
			}
			_ = removeArtifacts(vmi, layout)
			continue
		}
		var fe *field.Error
		if !errors.As(err, &fe) || fe.Field != "spec.volumes[0].hostDisk.path" {
			t.Errorf("%s: %v; want a field error on spec.volumes[0].hostDisk.path", c.path, err)
		} else if !strings.Contains(err.Error(), "symbolic link") && !strings.Contains(err.Error(), "too many links") {
			t.Errorf("%s: %v; want it to name the symbolic link", c.path, err)
		}
		if _, err := os.Stat(layout.StateFolder(vmi)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: state folder made", c.path)
		}
	}
	if _, err := os.Lstat(filepath.Join(outside, "new.img")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file was created outside the allowed folder: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.img")); string(b) != "secret" {
		t.Errorf("the file outside was changed")
	}
}
