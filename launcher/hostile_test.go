package launcher_test

// Hostile input on the real daemon (issue 4, part 3): the files that hold
// a tenant's user-data and secrets are readable by their owner only, and
// user-data never appears in the launcher's log, in an error it returns,
// or in the domain libvirt keeps — on success and on every kind of failure.

import (
	"bytes"
	"context"
	"encoding/xml"
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

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
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

// TestE2EHostilePaths syncs VMIs whose paths try to leave their folders
// (".." in a containerDisk path, kernel path or image reference; absolute
// paths; a hostDisk outside HostLayout.HostDiskAllow, which names one
// folder here) and VMIs whose paths look odd but stay inside. A refused
// VMI gets an error naming a field path and leaves no state folder, no
// domain and no file anywhere; an accepted one gets a domain whose every
// path, as libvirt keeps it, is in its state folder, the image store, or
// the allowed hostDisk folder.
func TestE2EHostilePaths(t *testing.T) {
	allowed := filepath.Join(testRoot, uniqueName("hostdisks"))
	if err := os.MkdirAll(allowed, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(allowed) })
	e := newEnvWith(t, func(c *launcher.Config) { c.Layout.HostDiskAllow = []string{allowed} })
	ctx := context.Background()
	// The test guest's image holds boot/vmlinuz: a file to point paths at.
	cases := []struct {
		name, disk, volume string
		field              string // "" when the VMI is accepted
	}{
		{"cd-dotdot", "root", "containerDisk: {image: " + testguest.Ref + ", path: ../../../../etc/shadow}", "spec.volumes[0].containerDisk.path"},
		{"cd-abs-inside", "root", "containerDisk: {image: " + testguest.Ref + ", path: /boot/vmlinuz}", ""},
		{"cd-dots", "root", "containerDisk: {image: " + testguest.Ref + ", path: ./boot/./vmlinuz}", "spec.volumes[0].containerDisk.path"},
		{"cd-image-escaped", "root", "containerDisk: {image: \"%2E%2E%2F%2E%2E\"}", "spec.volumes[0].containerDisk.image"},
		{"cd-image-dotdot", "root", "containerDisk: {image: ../../../etc}", "spec.volumes[0].containerDisk.image"},
		{"cd-image-abs", "root", "containerDisk: {image: /etc/shadow}", "spec.volumes[0].containerDisk.image"},
		{"hostdisk-outside", "root", "hostDisk: {path: /etc/shadow, type: Disk}", "spec.volumes[0].hostDisk.path"},
		{"hostdisk-create-outside", "root", "hostDisk: {path: /var/tmp/" + uniqueName("evil") + ".img, type: DiskOrCreate, capacity: 1Mi}", "spec.volumes[0].hostDisk.path"},
		{"hostdisk-dotdot", "root", "hostDisk: {path: " + allowed + "/../../../etc/shadow, type: Disk}", "spec.volumes[0].hostDisk.path"},
		{"hostdisk-allowed", "root", "hostDisk: {path: " + allowed + "/disk.img, type: DiskOrCreate, capacity: 1Mi}", ""},
		{"volume-name-dotdot", "..", "emptyDisk: {capacity: 1Mi}", "spec."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vmi := decodeVMI(t, fmt.Sprintf(vmiYAML, uniqueName("e2e-path-"+c.name), 30, "  startStrategy: Paused\n", testguest.ActionACPI,
				"    memory:\n      guest: 128Mi\n",
				"      disks:\n      - {name: \""+c.disk+"\", disk: {bus: virtio}}",
				"  volumes:\n  - name: \""+c.disk+"\"\n    "+c.volume))
			before := treeOf(t, testRoot)
			err := e.l.Sync(ctx, vmi)
			state := e.layout.StateFolder(vmi.DeepCopy())
			if c.field != "" {
				var fe *field.Error
				if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, c.field) {
					t.Errorf("Sync: %v; want a field error on %s", err, c.field)
				}
				t.Logf("refused: %v", err)
				if _, serr := os.Stat(state); !errors.Is(serr, fs.ErrNotExist) {
					t.Errorf("state folder left behind (%v)", serr)
				}
				if !lookupGone(t, e.conn, domainName(vmi)) {
					t.Errorf("a domain was left behind")
					_ = e.l.Delete(ctx, vmi)
				}
				if after := treeOf(t, testRoot); after != before {
					t.Errorf("files changed under %s:\nbefore:\n%s\nafter:\n%s", testRoot, before, after)
				}
				return
			}
			if err != nil {
				t.Fatalf("Sync: %v", err)
			}
			t.Cleanup(func() { _ = e.l.Delete(ctx, vmi) })
			raw := inactiveXML(t, e.conn, domainName(vmi))
			paths := xmlPaths(t, raw)
			if len(paths) < 4 {
				t.Errorf("only %d paths in the domain: %v", len(paths), paths)
			}
			for _, p := range paths {
				ok := false
				for _, dir := range []string{state, e.layout.ImageStore, allowed} {
					if rel, err := filepath.Rel(dir, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
						ok = true
					}
				}
				if !ok {
					t.Errorf("domain path %s is outside the state folder, the image store and %s", p, allowed)
				}
			}
		})
	}
	if _, err := os.Stat("/var/tmp/" + uniqueName("evil") + ".img"); err == nil {
		t.Errorf("a hostDisk outside the allowed folder was created")
		_ = os.Remove("/var/tmp/" + uniqueName("evil") + ".img")
	}
}

// treeOf lists the paths under dir.
func treeOf(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			b.WriteString(p + "\n")
		}
		return nil
	})
	return b.String()
}

// xmlPaths returns every value in a domain's XML that names a host file:
// the attributes file, path, dev (of a <source>), socket and dir, and the
// text of <kernel>, <initrd>, <loader> and <nvram>.
func xmlPaths(t *testing.T, raw string) []string {
	t.Helper()
	var out []string
	dec := xml.NewDecoder(strings.NewReader(raw))
	var stack []string
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch tt := tok.(type) {
		case xml.StartElement:
			stack = append(stack, tt.Name.Local)
			for _, a := range tt.Attr {
				switch a.Name.Local {
				case "file", "path", "socket", "dir":
					out = append(out, a.Value)
				case "dev":
					if tt.Name.Local == "source" {
						out = append(out, a.Value)
					}
				}
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if n := len(stack); n > 0 {
				switch stack[n-1] {
				case "kernel", "initrd", "loader", "nvram":
					if s := strings.TrimSpace(string(tt)); s != "" {
						out = append(out, s)
					}
				}
			}
		}
	}
	return out
}
