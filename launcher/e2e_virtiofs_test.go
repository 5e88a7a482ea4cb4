package launcher_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// TestE2EVirtiofs boots the test guest with two virtiofs filesystems in
// the host layout, which libvirt serves with a virtiofsd of its own: a
// claim that is a folder of the host (HostLayout.Claims, type dir) and a
// configMap, whose files the launcher writes into a folder of the state
// folder. The guest mounts both by their tags and reads their files.
func TestE2EVirtiofs(t *testing.T) {
	hosttest.Files(t, convert.DefaultVirtiofsd)
	claim := hosttest.Dir(t, testRoot, "share-")
	if err := os.WriteFile(filepath.Join(claim, "hello.txt"), []byte("hello from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cm := t.TempDir()
	if err := os.WriteFile(filepath.Join(cm, "app.conf"), []byte("answer=42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, func(c *launcher.Config) {
		c.Layout.Claims = map[string]convert.DiskSource{"shared-claim": {Type: "dir", Path: claim}}
		c.Sources.ConfigMaps = map[string]string{"app-config": cm}
	})
	vmi := decodeVMI(t, fmt.Sprintf(vmiYAML, uniqueName("virtiofs"), 0, "",
		testguest.ActionPowerOff+" "+testguest.VirtiofsArg+"=data,app",
		"    memory:\n      guest: 128Mi\n",
		"      filesystems:\n      - {name: data, virtiofs: {}}\n      - {name: app, virtiofs: {}}",
		"  volumes:\n  - {name: data, persistentVolumeClaim: {claimName: shared-claim}}\n  - {name: app, configMap: {name: app-config}}\n"))
	e.sync(t, vmi)
	r := e.waitConsole(t, vmi, bootTimeout)
	if s := r.Share("data"); s == nil || s.Failed || string(s.Files["hello.txt"]) != "hello from the host\n" || len(s.Files) != 1 {
		t.Errorf("share data (the claim's folder): %+v", s)
	}
	if s := r.Share("app"); s == nil || s.Failed || string(s.Files["app.conf"]) != "answer=42\n" || len(s.Files) != 1 {
		t.Errorf("share app (the configMap): %+v", s)
	}
	n := 0
	for _, d := range r.DevicesOf("virtio") {
		if d == "virtiofs" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d virtio devices bound to the virtiofs driver, want 2 (%v)", n, r.DevicesOf("virtio"))
	}
	t.Logf("shares: %+v", r.Shares)
}
