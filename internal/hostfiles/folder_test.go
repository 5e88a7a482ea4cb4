package hostfiles

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
)

// TestConfigFolders: a config volume that a filesystem shares is a folder
// of its files in the state folder, written whole, kept when it holds them
// already, and rewritten (a stray file gone) when it does not.
func TestConfigFolders(t *testing.T) {
	layout, sources := testLayout(t)
	cm := t.TempDir()
	os.WriteFile(filepath.Join(cm, "app.conf"), []byte("a=1\n"), 0o644)
	sources.ConfigMaps = map[string]string{"app": cm}
	vmi := artifactVMI(t, `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: shares, namespace: ns1, labels: {tier: web}}
spec:
  domain:
    devices:
      filesystems:
      - {name: app, virtiofs: {}}
      - {name: info, virtiofs: {}}
    resources: {requests: {memory: 128Mi}}
  volumes:
  - {name: app, configMap: {name: app}}
  - name: info
    downwardAPI:
      fields:
      - {path: meta/tier, fieldRef: {fieldPath: "metadata.labels['tier']"}}
`)
	if err := prepareArtifacts(context.Background(), vmi, layout, sources); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(layout.StateFolder(vmi), "config")
	read := func(rel string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(config, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if got := read("app/app.conf"); got != "a=1\n" {
		t.Errorf("app/app.conf = %q", got)
	}
	if got := read("info/meta/tier"); got != "web" {
		t.Errorf("info/meta/tier = %q", got)
	}
	if st, err := os.Stat(filepath.Join(config, "app")); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("app folder: %v %v, want mode 0700", st.Mode(), err)
	}
	stray := filepath.Join(config, "app", "stray")
	os.WriteFile(stray, []byte("x"), 0o600)
	os.WriteFile(filepath.Join(cm, "app.conf"), []byte("a=2\n"), 0o644)
	if err := prepareArtifacts(context.Background(), vmi, layout, sources); err != nil {
		t.Fatal(err)
	}
	if got := read("app/app.conf"); got != "a=2\n" {
		t.Errorf("after a change, app/app.conf = %q", got)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("a stray file survived the rewrite: %v", err)
	}
	if same, err := sameFolder(filepath.Join(config, "app"), nil); same || err != nil {
		t.Errorf("sameFolder of a folder with a file and no files = %v, %v", same, err)
	}
}

// TestSharedClaimFolder: a claim a filesystem shares must be a folder of
// the host; a missing one is ErrNotReady naming the claim's field.
func TestSharedClaimFolder(t *testing.T) {
	layout, sources := testLayout(t)
	share := filepath.Join(t.TempDir(), "share")
	layout.Claims = map[string]convert.DiskSource{"data": {Type: "dir", Path: share}}
	vmi := artifactVMI(t, `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: claimshare, namespace: ns1}
spec:
  domain:
    devices:
      filesystems:
      - {name: data, virtiofs: {}}
    resources: {requests: {memory: 128Mi}}
  volumes:
  - {name: data, dataVolume: {name: data}}
`)
	err := prepareArtifacts(context.Background(), vmi, layout, sources)
	var fe *field.Error
	if !errors.Is(err, hostplan.ErrNotReady) || !errors.As(err, &fe) || fe.Field != "spec.volumes[0].dataVolume.name" {
		t.Fatalf("missing folder: %v, want ErrNotReady at spec.volumes[0].dataVolume.name", err)
	}
	if err := os.Mkdir(share, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := prepareArtifacts(context.Background(), vmi, layout, sources); err != nil {
		t.Fatalf("with the folder: %v", err)
	}
}
