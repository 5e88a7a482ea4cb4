// Package hosttest is how the project's tests say what they need of the
// host: programs, files, root, a libvirt daemon. A test whose needs are not
// met is skipped on a developer's machine, with the step that provides them,
// and fails when the environment variable CI is set: CI prepares the host
// with .ci/prepare-host.sh, so anything missing there is a missing install
// step, never a reason to skip.
package hosttest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// Programs maps each program the tests run to the Debian package that
// provides it. Every package named here is listed in .ci/host-packages
// (TestProgramsAreInstalledByCI checks it).
var Programs = map[string]string{
	"virt-xml-validate":  "libvirt-clients",
	"virsh":              "libvirt-clients",
	"xmllint":            "libxml2-utils",
	"qemu-img":           "qemu-utils",
	"qemu-system-x86_64": "qemu-system-x86",
	"isoinfo":            "genisoimage",
	"blkid":              "util-linux",
	"mount":              "util-linux",
	"busybox":            "busybox-static",
	"swtpm":              "swtpm",
	"swtpm_setup":        "swtpm-tools",
	"pgrep":              "procps",
	"grub-mkimage":       "grub-common",
	"xorriso":            "xorriso",
	"mformat":            "mtools",
	"mmd":                "mtools",
	"mcopy":              "mtools",
}

// Files the tests read, with the package or step that provides each.
const (
	// KernelTree is Debian's cloud kernel, extracted by .ci/prepare-host.sh.
	KernelTree = "/var/cache/vmi2libvirt/kernel"
	// Busybox is busybox-static's binary.
	Busybox = "/bin/busybox"
	// OVMFCode is the EFI firmware of package ovmf.
	OVMFCode = "/usr/share/OVMF/OVMF_CODE_4M.fd"
)

// Missing skips the test saying what is missing, or fails it when CI is
// set.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s: missing under CI, where .ci/prepare-host.sh must have provided it", msg)
	}
	t.Skipf("%s; run .ci/prepare-host.sh (as root) to provide it", msg)
}

// Tools requires each program on PATH.
func Tools(t testing.TB, programs ...string) {
	t.Helper()
	var missing []string
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			if pkg := Programs[p]; pkg != "" {
				p += " (package " + pkg + ")"
			}
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		Missing(t, "needs %s", strings.Join(missing, ", "))
	}
}

// Files requires each path to exist.
func Files(t testing.TB, paths ...string) {
	t.Helper()
	var missing []string
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		Missing(t, "needs %s", strings.Join(missing, ", "))
	}
}

// Root requires the test to run as root.
func Root(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "needs root")
	}
}

// Libvirt requires a libvirt daemon answering on uri (virsh version).
func Libvirt(t testing.TB, uri string) {
	t.Helper()
	Tools(t, "virsh")
	if out, err := exec.Command("virsh", "-c", uri, "version").CombinedOutput(); err != nil {
		Missing(t, "needs libvirtd answering on %s (%s)", uri, strings.TrimSpace(string(out)))
	}
}

// libvirtLock is the file that serializes the tests that restart libvirtd
// (exclusive) with every other test that uses it (shared), across the test
// binaries go test runs at once, in every module of the repository.
const libvirtLock = "/run/vmi2libvirt-e2e.lock"

// LockLibvirt holds the libvirt lock until the test ends: shared by the
// tests that use the daemon, exclusive for those that restart it.
func LockLibvirt(t testing.TB, exclusive bool) {
	t.Helper()
	f, err := os.OpenFile(libvirtLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("libvirt test lock: %v", err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		t.Fatalf("libvirt test lock: %v", err)
	}
	t.Cleanup(func() { f.Close() })
}

// Dir makes a folder for the test below root (made if missing), named
// prefix and a random suffix, mode 0711 so that QEMU, which runs as
// another user, can reach what libvirt puts in it; it is removed when the
// test ends.
func Dir(t testing.TB, root, prefix string) string {
	t.Helper()
	if err := os.MkdirAll(root, 0o711); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(root, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}
