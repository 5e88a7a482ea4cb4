package testcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestFailedStartStopsServers makes envtest's Start fail after etcd and
// kube-apiserver are up (the API server refuses the CRD) and checks that
// start reported it and left no server running: envtest itself would leave
// both running.
func TestFailedStartStopsServers(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Assets(root); err != nil {
		Start(t) // skips, or fails under CI, as every test without the binaries
	}
	// metadata.name must be <plural>.<group>: the API server refuses this.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	err = os.WriteFile(bad, []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: wrong.kubevirt.io
spec:
  group: kubevirt.io
  names: {kind: Thing, plural: things}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object}}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}

	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() { // start ends with Fatalf: runtime.Goexit ends this goroutine
		defer close(done)
		start(rec, bad)
	}()
	<-done

	if !rec.fatal || !strings.Contains(rec.messages(), "starting kube-apiserver and etcd") ||
		!strings.Contains(rec.messages(), `metadata.name: Invalid value: "wrong.kubevirt.io"`) {
		t.Fatalf("start did not fail on the refused CRD; it reported:\n%s", rec.messages())
	}
	if left := childServers(t); len(left) > 0 {
		t.Errorf("after the failed start these servers still run: %s", strings.Join(left, ", "))
	}
}

// childServers lists the kube-apiserver and etcd processes whose parent is
// this test process (envtest starts them as children).
func childServers(t *testing.T) []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 2 || fields[1] != self || fields[0] == "Z" {
			continue
		}
		exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if base := filepath.Base(strings.TrimSuffix(exe, " (deleted)")); base == "kube-apiserver" || base == "etcd" {
			found = append(found, fmt.Sprintf("%s (pid %s)", base, e.Name()))
		}
	}
	return found
}

// recorder is a testing.TB whose Fatal and Skip record the message and end
// the goroutine, so a test can watch start fail; the rest goes to the real
// test.
type recorder struct {
	testing.TB
	mu    sync.Mutex
	log   []string
	fatal bool
}

func (r *recorder) record(fatal bool, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, msg)
	r.fatal = r.fatal || fatal
}

func (r *recorder) messages() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.log, "\n")
}

func (r *recorder) Fatal(args ...any) { r.record(true, fmt.Sprint(args...)); runtime.Goexit() }
func (r *recorder) Fatalf(format string, args ...any) {
	r.record(true, fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.record(false, fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (r *recorder) Errorf(format string, args ...any) { r.record(true, fmt.Sprintf(format, args...)) }
func (r *recorder) Helper()                           {}
