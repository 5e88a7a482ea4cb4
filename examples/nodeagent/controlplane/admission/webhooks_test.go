package admission

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

var rewrite = flag.Bool("update", false, "rewrite "+committedFile+" from Configurations")

// committedFile is the webhook configurations as .ci/cluster.sh installs
// them (it adds the caBundle after each url line).
const committedFile = "../../deploy/admission-webhooks.yaml"

// TestCommittedConfigurations renders Configurations for the control
// plane's default address and compares it byte for byte with the committed
// file, so the file never drifts from the Go source.
func TestCommittedConfigurations(t *testing.T) {
	m, v := Configurations("https://127.0.0.1:8443", nil)
	var b bytes.Buffer
	b.WriteString("# KubeVirt's admission webhook configurations for VMs and VMIs, sent to the\n" +
		"# control plane at its default -bind-address, generated from\n" +
		"# controlplane/admission.Configurations. Do not edit: run\n" +
		"# `go test ./controlplane/admission -update` in examples/nodeagent.\n" +
		"# .ci/cluster.sh adds the caBundle (its CA) after each url line.\n")
	for i, obj := range []any{m, v} {
		if i > 0 {
			b.WriteString("---\n")
		}
		y, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(bytes.ReplaceAll(y, []byte("  creationTimestamp: null\n"), nil))
	}
	if *rewrite {
		if os.Getenv("CI") != "" {
			t.Fatal("-update refuses to run when CI is set")
		}
		if err := os.WriteFile(committedFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	committed, err := os.ReadFile(committedFile)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(committed), b.String()); diff != "" {
		t.Errorf("%s is not what Configurations makes (run `go test ./controlplane/admission -update`):\n%s", filepath.Base(committedFile), diff)
	}
}
