//go:build cgo

package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// TestMigrate runs the test guest on one node of .ci/node.sh and migrates
// it with the command to another: exit 0 once the target runs it, progress
// lines then the target's status line on standard output, the target's status Running with the completed
// migration, the source's domain gone; migrating it again from the source
// is exit 2 (no such VMI there), and a target URI that does not answer
// leaves it where it is (exit 3).
func TestMigrate(t *testing.T) {
	testguest.Require(t, convert.DefaultImageStore)
	pid := strconv.Itoa(os.Getpid())
	a, b := "cm"+pid+"a", "cm"+pid+"b"
	uriA, uriB := hosttest.Node(t, a), hosttest.Node(t, b)
	name := "cli-migrate-" + pid
	dirA, dirB := hosttest.Dir(t, "/var/lib/vmi2libvirt", "e2e-"+a+"-"), hosttest.Dir(t, "/var/lib/vmi2libvirt", "e2e-"+b+"-")
	src := []string{"--uri", uriA, "--owner", a, "--state-dir", dirA}
	dst := []string{"--uri", uriB, "--owner", b, "--state-dir", dirB}
	vmiFile := writeFile(t, t.TempDir(), "tiny.yaml", strings.Replace(sample(t, "../vmis/vmi-tiny.yaml"), "name: tiny", "name: "+name, 1))
	t.Cleanup(func() {
		_ = exec.Command(binary, append([]string{"delete", name}, src...)...).Run()
		_ = exec.Command(binary, append([]string{"delete", name}, dst...)...).Run()
	})
	expect(t, exitOK, "", append([]string{"run", "--emulate", vmiFile}, src...)...)

	to := []string{"--to", uriB, "--to-owner", b, "--to-state-dir", dirB}
	expect(t, exitHost, "", append([]string{"migrate", name, "-f", vmiFile, "--emulate", "--to", "qemu+unix:///system?socket=/nonexistent", "--to-owner", b}, src...)...)
	if st := statusJSON(t, append([]string{name}, src...)...); st.Phase != v1.Running {
		t.Fatalf("after a migration to nowhere: %s, want Running on the source", st.Phase)
	}

	r := expect(t, exitOK, "", append(append([]string{"migrate", name, "-f", vmiFile, "--emulate"}, to...), src...)...)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "default/"+name+" phase=Running") || !strings.HasSuffix(last, " on "+b) {
		t.Errorf("migrate's last line %q, want the target's status", last)
	}
	if !strings.HasPrefix(r.stdout, "migrating ") || !strings.Contains(r.stdout, "\nmigrated to "+b+" in ") {
		t.Errorf("migrate's progress:\n%s", r.stdout)
	}
	t.Logf("migrate's output:\n%s", r.stdout)
	st := statusJSON(t, append([]string{name}, dst...)...)
	if st.Phase != v1.Running || st.MigrationState == nil || !st.MigrationState.Completed || st.MigrationState.SourceNode != a || st.MigrationState.TargetNode != b {
		t.Errorf("target status: %s, migrationState %+v", st.Phase, st.MigrationState)
	}
	out, _ := exec.Command("virsh", "-c", uriA, "list", "--all", "--name").CombinedOutput()
	if strings.Contains(string(out), name) {
		t.Errorf("the source still lists the domain: %s", out)
	}
	expect(t, exitUsage, "", append(append([]string{"migrate", name, "-f", vmiFile, "--emulate"}, to...), src...)...)
}
