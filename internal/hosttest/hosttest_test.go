package hosttest

import (
	"os"
	"strings"
	"testing"
)

// TestProgramsAreInstalledByCI: every package that provides a program the
// tests run is in .ci/host-packages, the list CI installs.
func TestProgramsAreInstalledByCI(t *testing.T) {
	data, err := os.ReadFile("../../.ci/host-packages")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		if f := strings.Fields(line); len(f) > 0 {
			listed[f[0]] = true
		}
	}
	for program, pkg := range Programs {
		if !listed[pkg] {
			t.Errorf("%s comes from package %s, which .ci/host-packages does not list", program, pkg)
		}
	}
	for _, pkg := range []string{"ovmf", "busybox-static"} { // Files' packages
		if !listed[pkg] {
			t.Errorf("package %s is not in .ci/host-packages", pkg)
		}
	}
}
