package layering

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
)

const module = "github.com/vmi2libvirt/vmi2libvirt"

// pkg is what go list says of one package.
type pkg struct {
	ImportPath   string
	Imports      []string
	Deps         []string
	TestImports  []string
	XTestImports []string
}

// list runs go list -json on patterns in dir (flags before them).
func list(t *testing.T, dir string, args ...string) []pkg {
	t.Helper()
	hosttest.Tools(t, "go")
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// pure are the packages that read no file, call no libvirt, take no clock
// or randomness: what they import directly may not be any of impure.
var pure = []string{"api", "convert", "domain", "pipeline", "hostplan", "hostcaps", "internal/vocab"}

var impure = []string{"os", "os/exec", "syscall", "io/ioutil", "math/rand", "math/rand/v2", "crypto/rand", "net/http", "libvirt.org/go/libvirt"}

// cgoFree are the packages that must build without libvirt's C library.
var cgoFree = []string{"api", "convert", "domain", "pipeline", "hostplan", "hostcaps", "stream", "imagestore", "internal/hostfiles", "internal/streamconn", "internal/fanout", "internal/vocab"}

// TestPurePackages: the pure packages import nothing that reaches the
// host, and no package meant to build without cgo depends on libvirt's
// binding.
func TestPurePackages(t *testing.T) {
	for _, p := range list(t, "../..", "-deps=false", "./...") {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if slices.Contains(pure, rel) {
			for _, imp := range p.Imports {
				if slices.Contains(impure, imp) {
					t.Errorf("%s is pure but imports %s", rel, imp)
				}
			}
		}
	}
	for _, rel := range cgoFree {
		for _, p := range list(t, "../..", "./"+rel) {
			if slices.Contains(p.Deps, "libvirt.org/go/libvirt") {
				t.Errorf("%s depends on libvirt.org/go/libvirt (cgo)", rel)
			}
		}
	}
}

// TestProductImportsNoTestKit: no package's own code (its tests aside)
// imports a test kit of testkit/ or the pipeline's test fixtures, but the
// test kits themselves and their commands.
func TestProductImportsNoTestKit(t *testing.T) {
	for _, p := range list(t, "../..", "./...") {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if strings.HasPrefix(rel, "testkit/") || rel == "internal/layering" {
			continue
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module+"/testkit/") || imp == module+"/internal/pipeline" {
				t.Errorf("%s imports the test kit %s", rel, strings.TrimPrefix(imp, module+"/"))
			}
		}
	}
}

// TestNodeAgentImportsNoInternal: the node agent's module, tests included,
// imports none of the library's internal/ packages (Go would refuse them
// only within one module; across the module boundary they are
// unversioned).
func TestNodeAgentImportsNoInternal(t *testing.T) {
	for _, p := range list(t, "../../examples/nodeagent", "./...") {
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			if strings.HasPrefix(imp, module+"/internal/") {
				t.Errorf("%s imports %s", p.ImportPath, imp)
			}
		}
	}
}
