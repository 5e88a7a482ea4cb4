package testcluster

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Virtctl returns the path of KubeVirt's virtctl that
// .ci/kube/build-virtctl.sh builds (DefaultCache/virtctl-<version>, the
// version .ci/kube/virtctl/go.mod requires; VIRTCTL names another file).
// Without it tb is skipped, or failed when the environment variable CI is
// set.
func Virtctl(tb testing.TB) string {
	tb.Helper()
	path := os.Getenv("VIRTCTL")
	if path == "" {
		root, err := RepoRoot()
		if err != nil {
			tb.Fatal(err)
		}
		version, err := KubeVirtVersion(root)
		if err != nil {
			tb.Fatal(err)
		}
		path = filepath.Join(DefaultCache, "virtctl-"+version, "virtctl")
	}
	if info, err := os.Stat(path); err != nil || info.Mode()&0o111 == 0 {
		if os.Getenv("CI") != "" {
			tb.Fatalf("testcluster: no executable virtctl at %s (CI is set: .ci/run builds it with .ci/kube/build-virtctl.sh)", path)
		}
		tb.Skipf("testcluster: no executable virtctl at %s; build it with: bash .ci/kube/build-virtctl.sh", path)
	}
	return path
}

// KubeVirtVersion reads the kubevirt.io/kubevirt version
// .ci/kube/virtctl/go.mod requires, from its one-line `require
// kubevirt.io/kubevirt vX.Y.Z`, as build-virtctl.sh reads it.
func KubeVirtVersion(root string) (string, error) {
	path := filepath.Join(root, ".ci", "kube", "virtctl", "go.mod")
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) >= 3 && fields[0] == "require" && fields[1] == "kubevirt.io/kubevirt" {
			return fields[2], nil
		}
	}
	if err := s.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("testcluster: %s has no line `require kubevirt.io/kubevirt VERSION`", path)
}
