package hosttest

import (
	"os"
	"path/filepath"
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

// TestDir: the folder is made below a root that did not exist, with mode
// 0711, and is gone once the test that asked for it ends.
func TestDir(t *testing.T) {
	root := filepath.Join(t.TempDir(), "not", "there")
	var dir string
	t.Run("user", func(t *testing.T) {
		dir = Dir(t, root, "vmis-")
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o711 || !fi.IsDir() || filepath.Dir(dir) != root || !strings.HasPrefix(filepath.Base(dir), "vmis-") {
			t.Errorf("Dir made %s, mode %v; want a folder vmis-* below %s, mode 0711", dir, fi.Mode(), root)
		}
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s after its test ended: %v, want it removed", dir, err)
	}
}
