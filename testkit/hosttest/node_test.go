package hosttest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
)

// TestNode starts a node, defines a domain on it and finds it there and
// not on the system libvirtd; the node has a host UUID of its own; a
// second up is the same node; after the test's cleanup (down) nothing of
// it is left.
func TestNode(t *testing.T) {
	const system = "qemu:///system"
	hosttest.Libvirt(t, system)
	name := "ht" + strconv.Itoa(os.Getpid())
	base := filepath.Join("/var/lib/vmi2libvirt/nodes", name)
	t.Run("up", func(t *testing.T) {
		uri := hosttest.Node(t, name)
		if !strings.HasPrefix(uri, "qemu+unix:///system?socket=") {
			t.Fatalf("URI %q, want qemu+unix:///system?socket=...", uri)
		}
		if again := hosttest.Node(t, name); again != uri {
			t.Errorf("second up: %q, want %q", again, uri)
		}
		xml := filepath.Join(t.TempDir(), "d.xml")
		dom := "hosttest-node-" + strconv.Itoa(os.Getpid())
		if err := os.WriteFile(xml, []byte(`<domain type="qemu"><name>`+dom+`</name><memory unit="MiB">32</memory><os><type arch="x86_64">hvm</type></os></domain>`), 0o644); err != nil {
			t.Fatal(err)
		}
		virsh(t, uri, "define", xml)
		if got := virsh(t, uri, "list", "--all", "--name"); !strings.Contains(got, dom) {
			t.Errorf("node lists %q, want %s", got, dom)
		}
		if got := virsh(t, system, "list", "--all", "--name"); strings.Contains(got, dom) {
			t.Errorf("the system libvirtd lists the node's domain %s: %q", dom, got)
		}
		if a, b := uuid(t, uri), uuid(t, system); a == b || a == "" {
			t.Errorf("node host UUID %q, system's %q: want distinct", a, b)
		}
		if got := virsh(t, uri, "hostname"); strings.TrimSpace(got) != name {
			t.Errorf("node hostname %q, want %s", got, name)
		}
		// A restarted daemon (ended, or killed) is the same node.
		hostUUID := uuid(t, uri)
		for _, sig := range []string{"TERM", "KILL"} {
			if err := hosttest.RestartNodeLibvirtd(name, sig); err != nil {
				t.Fatal(err)
			}
			if got := virsh(t, uri, "list", "--all", "--name"); !strings.Contains(got, dom) {
				t.Errorf("after libvirtd's restart (SIG%s) the node lists %q, want %s", sig, got, dom)
			}
			if got := virsh(t, uri, "hostname"); strings.TrimSpace(got) != name || uuid(t, uri) != hostUUID {
				t.Errorf("after libvirtd's restart (SIG%s): hostname %q, host UUID %s; want %s, %s", sig, got, uuid(t, uri), name, hostUUID)
			}
		}
	})
	if _, err := os.Stat(base); !os.IsNotExist(err) {
		t.Errorf("after down, %s: %v, want it gone", base, err)
	}
}

func virsh(t *testing.T, uri string, args ...string) string {
	t.Helper()
	out, err := exec.Command("virsh", append([]string{"-c", uri}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("virsh %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// uuid is the host UUID of libvirt's capabilities.
func uuid(t *testing.T, uri string) string {
	caps := virsh(t, uri, "capabilities")
	_, rest, _ := strings.Cut(caps, "<uuid>")
	u, _, _ := strings.Cut(rest, "</uuid>")
	return u
}
