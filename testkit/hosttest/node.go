package hosttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// NodeScript is the script, relative to the repository's root, that starts
// and stops a second libvirt host on this machine (see Node).
const NodeScript = ".ci/node.sh"

// Node starts the libvirt host called name on this machine with
// .ci/node.sh — a libvirtd of its own in its own mount and UTS namespace,
// with its own host UUID and port ranges —, stops it and removes what it
// left when the test ends, and returns its URI
// (qemu+unix:///system?socket=...). It needs root and libvirtd's packages
// (see Missing); name must be unique among the tests running at once (a
// node left over from a dead test of the same name is started afresh).
func Node(t testing.TB, name string) string {
	t.Helper()
	Root(t)
	Tools(t, "virsh", "unshare")
	if _, err := exec.LookPath("libvirtd"); err != nil {
		Missing(t, "needs libvirtd (package libvirt-daemon-system)")
	}
	script, err := findScript(NodeScript)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("bash", script, "down", name).CombinedOutput(); err != nil {
			t.Errorf("%s down %s: %v\n%s", NodeScript, name, err, out)
		}
	})
	out, err := exec.Command("bash", script, "up", name).Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("%s up %s: %s", NodeScript, name, strings.TrimSpace(msg))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// RestartNodeLibvirtd stops the libvirtd of the node called name (started
// by Node) with signal ("TERM", or "KILL" for a crash) and starts it again
// in the node's namespaces; it returns once the new daemon answers. The
// node's guests run on, and the new daemon takes them back.
func RestartNodeLibvirtd(name, signal string) error {
	script, err := findScript(NodeScript)
	if err != nil {
		return err
	}
	if out, err := exec.Command("bash", script, "restart-libvirtd", name, signal).CombinedOutput(); err != nil {
		return fmt.Errorf("%s restart-libvirtd %s %s: %v: %s", NodeScript, name, signal, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// NodeQEMUPIDFile is the file where the libvirtd of the node called name
// keeps the process ID of its domain called domain (the node's
// /run/libvirt/qemu, seen from the host's namespace).
func NodeQEMUPIDFile(name, domain string) string {
	return filepath.Join(nodesDir, name, "run", "qemu", domain+".pid")
}

// NodeLog is the path, seen from the host's namespace, of a log of the
// node called name: rel is relative to the node's /var/log/libvirt
// ("libvirtd.log", "qemu/DOMAIN.log").
func NodeLog(name, rel string) string {
	return filepath.Join(nodesDir, name, "log", rel)
}

// SetNodeQEMUHook makes script the QEMU hook of the node called name
// (libvirt's /etc/libvirt/hooks/qemu: called with the domain's name, the
// operation and its phase) and restarts the node's libvirtd, which looks
// for hooks when it starts.
func SetNodeQEMUHook(name, script string) error {
	dir := filepath.Join(nodesDir, name, "etc", "hooks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "qemu"), []byte(script), 0o755); err != nil {
		return err
	}
	return RestartNodeLibvirtd(name, "TERM")
}

// FreezeNodeLibvirtd stops the libvirtd of the node called name (started
// by Node) with SIGSTOP, as a daemon too loaded to answer; thaw resumes it
// (SIGCONT), and so does the end of the test if thaw was not called. It
// only reports errors, so that a test's goroutine may call it.
func FreezeNodeLibvirtd(t testing.TB, name string) (thaw func() error, err error) {
	pid, err := nodeLibvirtdPID(name)
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("SIGSTOP the libvirtd of node %s (%d): %w", name, pid, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	return func() error {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			return fmt.Errorf("SIGCONT the libvirtd of node %s (%d): %w", name, pid, err)
		}
		return nil
	}, nil
}

// nodeLibvirtdPID is the process ID of the libvirtd of the node called
// name, from its pid file.
func nodeLibvirtdPID(name string) (int, error) {
	b, err := os.ReadFile(filepath.Join(nodesDir, name, "libvirtd.pid"))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("the libvirtd pid file of node %s holds %q", name, b)
	}
	return pid, nil
}

// nodesDir holds the nodes' folders (.ci/node.sh's $nodes).
const nodesDir = "/var/lib/vmi2libvirt/nodes"

// findScript finds rel in the working folder or the nearest folder above
// it that has it: the repository's root, from any package's tests.
func findScript(rel string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("hosttest: no %s in the working folder or above it", rel)
		}
		dir = up
	}
}
