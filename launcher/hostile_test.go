package launcher_test

// Hostile input on the real daemon (issue 4, part 3): the files that hold
// a tenant's user-data and secrets are readable by their owner only, and
// user-data never appears in the launcher's log, in an error it returns,
// or in the domain libvirt keeps — on success and on every kind of failure.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/internal/testguest"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

// secretMarker is in every user-data, network-data and secret of the test.
const secretMarker = "SECRET-MARKER-9d2c41"

// lockedBuffer is a bytes.Buffer safe for the launcher's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestE2EUserDataSecrecy syncs VMIs whose cloud-init user-data, network
// data and secret volumes hold a marker, two that run (NoCloud inline;
// ConfigDrive from a secret, beside a secret volume) and five that fail at
// each stage (validation, size, a missing secret, a missing image after
// the ISO was written, a dangling disk). It checks the modes of every
// file in the state folders, and that the marker is in neither the
// launcher's log (debug level), nor its errors, nor the domains.
func TestE2EUserDataSecrecy(t *testing.T) {
	logBuf := &lockedBuffer{}
	secrets := t.TempDir()
	write := func(dir, name, content string) string {
		d := filepath.Join(secrets, dir)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return d
	}
	udSecret := write("ud", "userdata", "#cloud-config\n# "+secretMarker+"\n")
	creds := write("creds", "password", "hunter2-"+secretMarker)
	e := newEnvWith(t, func(c *launcher.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.Sources.Secrets = map[string]string{"ud-secret": udSecret, "creds": creds}
	})
	ctx := context.Background()

	mk := func(base, devices, volumes string) *v1.VirtualMachineInstance {
		return decodeVMI(t, fmt.Sprintf(vmiYAML, uniqueName(base), 30, "  startStrategy: Paused\n", testguest.ActionACPI,
			"    memory:\n      guest: 128Mi\n", devices, volumes))
	}
	ciDisk := "      disks:\n      - {name: ci, disk: {bus: virtio}}"
	noCloud := mk("e2e-secret-nocloud", ciDisk, `  volumes:
  - name: ci
    cloudInitNoCloud:
      userData: "#cloud-config\n# `+secretMarker+`\n"
      networkData: "version: 2\n# `+secretMarker+`\n"`)
	configDrive := mk("e2e-secret-cfgdrive", ciDisk+"\n      - {name: creds, disk: {bus: virtio}}", `  volumes:
  - name: ci
    cloudInitConfigDrive:
      secretRef: {name: ud-secret}
  - name: creds
    secret: {secretName: creds}`)

	var errs []error
	for _, vmi := range []*v1.VirtualMachineInstance{noCloud, configDrive} {
		e.sync(t, vmi)
	}
	for _, vmi := range []*v1.VirtualMachineInstance{noCloud, configDrive} {
		state := e.layout.StateFolder(vmi.DeepCopy())
		checkOwnerOnly(t, state)
		if raw := inactiveXML(t, e.conn, domainName(vmi)); strings.Contains(raw, secretMarker) {
			t.Errorf("%s: the domain shows user-data", vmi.Name)
		}
		if _, err := e.l.Status(ctx, vmi); err != nil {
			errs = append(errs, err)
		}
	}
	// The ISOs do hold the marker: the check above looked at the right files.
	for _, f := range []string{
		filepath.Join(e.layout.StateFolder(noCloud.DeepCopy()), "cloud-init", "nocloud.iso"),
		filepath.Join(e.layout.StateFolder(configDrive.DeepCopy()), "cloud-init", "configdrive.iso"),
		filepath.Join(e.layout.StateFolder(configDrive.DeepCopy()), "config", "creds.iso"),
	} {
		if b, err := os.ReadFile(f); err != nil || !bytes.Contains(b, []byte(secretMarker)) {
			t.Errorf("%s does not hold the marker (%v)", f, err)
		}
	}

	failing := []struct {
		vmi  *v1.VirtualMachineInstance
		path string // field path the error names
	}{
		{mk("e2e-secret-b64", ciDisk, `  volumes:
  - name: ci
    cloudInitNoCloud: {userDataBase64: "`+secretMarker+`!!"}`), "spec.volumes[0].cloudInitNoCloud.userDataBase64"},
		{mk("e2e-secret-long", ciDisk, `  volumes:
  - name: ci
    cloudInitNoCloud: {userData: "`+secretMarker+strings.Repeat("x", 4096)+`"}`), "spec.volumes[0].cloudInitNoCloud.userData"},
		{mk("e2e-secret-noref", ciDisk, `  volumes:
  - name: ci
    cloudInitNoCloud: {userData: "`+secretMarker+`", networkDataSecretRef: {name: nope}}`), "spec.volumes[0].cloudInitNoCloud.networkDataSecretRef.name"},
		{mk("e2e-secret-noimage", ciDisk+"\n      - {name: root, disk: {bus: virtio}}", `  volumes:
  - name: ci
    cloudInitNoCloud: {userData: "`+secretMarker+`"}
  - name: root
    containerDisk: {image: localhost/no-such-image:1}`), "spec.volumes[1].containerDisk.image"},
		{mk("e2e-secret-dangling", ciDisk+"\n      - {name: ghost, disk: {bus: virtio}}", `  volumes:
  - name: ci
    cloudInitNoCloud: {userData: "`+secretMarker+`"}`), "spec.domain.devices.disks[1]"},
	}
	for _, c := range failing {
		err := e.l.Sync(ctx, c.vmi)
		if err == nil {
			t.Errorf("%s: Sync succeeded, want an error on %s", c.vmi.Name, c.path)
			_ = e.l.Delete(ctx, c.vmi)
			continue
		}
		errs = append(errs, err)
		var fe *field.Error
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, c.path) {
			t.Errorf("%s: %v; want a field error on %s", c.vmi.Name, err, c.path)
		}
		if _, serr := os.Stat(e.layout.StateFolder(c.vmi.DeepCopy())); !errors.Is(serr, fs.ErrNotExist) {
			t.Errorf("%s: state folder left behind after a failed Sync (%v)", c.vmi.Name, serr)
		}
		if d, lerr := e.conn.LookupDomainByName(domainName(c.vmi)); lerr == nil {
			_ = d.Free()
			t.Errorf("%s: a failed Sync left a domain", c.vmi.Name)
		}
	}
	for _, vmi := range []*v1.VirtualMachineInstance{noCloud, configDrive} {
		if err := e.l.Delete(ctx, vmi); err != nil {
			errs = append(errs, err)
			t.Errorf("Delete %s: %v", vmi.Name, err)
		}
	}
	time.Sleep(200 * time.Millisecond) // let the event loop log what it logs
	for _, err := range errs {
		if strings.Contains(err.Error(), secretMarker) || strings.Contains(fmt.Sprintf("%#v", err), secretMarker) {
			t.Errorf("an error shows user-data: %.300s", err)
		}
	}
	log := logBuf.String()
	if !strings.Contains(log, "domain defined") {
		t.Fatalf("the launcher's log is not in the buffer:\n%s", log)
	}
	if strings.Contains(log, secretMarker) {
		t.Errorf("the launcher's log shows user-data:\n%s", log)
	}
	t.Logf("%d errors and %d bytes of log checked", len(errs), len(log))
}

// checkOwnerOnly checks every regular file under dir (artifacts, and what
// libvirt put there) is readable by its owner only, and every folder is
// listable by its owner only (0700, or 0711: others may walk, not list).
func checkOwnerOnly(t *testing.T, dir string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		m := st.Mode()
		switch {
		case m.IsRegular():
			n++
			if m.Perm()&0o077 != 0 {
				t.Errorf("%s has mode %v, want owner only", p, m.Perm())
			}
		case m.IsDir():
			if m.Perm()&0o066 != 0 {
				t.Errorf("folder %s has mode %v, want at most 0711", p, m.Perm())
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("walk %s: %v", dir, err)
	}
	if n == 0 {
		t.Errorf("no files in %s", dir)
	}
}

// lookupGone tells whether libvirt has no domain called name.
func lookupGone(t *testing.T, c *libvirt.Connect, name string) bool {
	t.Helper()
	d, err := c.LookupDomainByName(name)
	if err == nil {
		_ = d.Free()
		return false
	}
	var lerr libvirt.Error
	if !errors.As(err, &lerr) || lerr.Code != libvirt.ERR_NO_DOMAIN {
		t.Errorf("lookup %s: %v", name, err)
	}
	return true
}
