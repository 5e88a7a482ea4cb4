// Package golden holds what the golden-file tests of this module share: a
// readable explanation of how two domains differ, a line diff, the libvirtxml
// round-trip check and the libvirt schema check with virt-xml-validate. The
// pipeline they check is internal/pipeline.
package golden

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// Explain describes how got differs from want for a test failure: a
// semantic diff (domain.Diff) when both parse as domains, then a line diff.
func Explain(want, got []byte) string {
	var b strings.Builder
	w, werr := domain.Unmarshal(want)
	g, gerr := domain.Unmarshal(got)
	if werr == nil && gerr == nil {
		if d := domain.Diff(w, g); d != "" {
			fmt.Fprintf(&b, "semantic diff (-want +got):\n%s\n", d)
		} else {
			b.WriteString("semantically equal; the bytes differ:\n")
		}
	}
	fmt.Fprintf(&b, "line diff (-want +got):\n%s", LineDiff(string(want), string(got)))
	return b.String()
}

// LineDiff returns a unified-style diff of two texts: changed lines prefixed
// with "-" (a's) and "+" (b's), with up to three lines of context, and "@@"
// lines giving where each hunk starts. It returns "" when a == b.
func LineDiff(a, b string) string {
	if a == b {
		return ""
	}
	x, y := splitLines(a), splitLines(b)
	ops := lcsOps(x, y)
	const context = 3
	var out strings.Builder
	// Mark which ops are shown: changes and the context around them.
	show := make([]bool, len(ops))
	for i, op := range ops {
		if op.kind != ' ' {
			for j := max(0, i-context); j <= min(len(ops)-1, i+context); j++ {
				show[j] = true
			}
		}
	}
	for i, op := range ops {
		if !show[i] {
			continue
		}
		if i == 0 || !show[i-1] {
			fmt.Fprintf(&out, "@@ -%d +%d @@\n", op.ai+1, op.bi+1)
		}
		out.WriteByte(op.kind)
		out.WriteString(op.line)
		out.WriteByte('\n')
	}
	return out.String()
}

// lineOp is one line of a diff: kind ' ' (both), '-' (only a) or '+' (only b);
// ai and bi are the line numbers (0-based) reached in a and b.
type lineOp struct {
	kind   byte
	line   string
	ai, bi int
}

// splitLines splits s into lines; a trailing newline does not make an empty
// last line, its absence is shown as a marker.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	if lines[len(lines)-1] == "" {
		return lines[:len(lines)-1]
	}
	lines[len(lines)-1] += " (no newline at end)"
	return lines
}

// lcsOps aligns x and y on a longest common subsequence of lines. Domain
// XML runs to a few hundred lines, so the quadratic table is cheap.
func lcsOps(x, y []string) []lineOp {
	n, m := len(x), len(y)
	l := make([][]int, n+1)
	for i := range l {
		l[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var ops []lineOp
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			ops = append(ops, lineOp{' ', x[i], i, j})
			i, j = i+1, j+1
		case i < n && (j == m || l[i+1][j] >= l[i][j+1]):
			ops = append(ops, lineOp{'-', x[i], i, j})
			i++
		default:
			ops = append(ops, lineOp{'+', y[j], i, j})
			j++
		}
	}
	return ops
}

// Validator is the name of libvirt's schema checker (package
// libvirt-clients). On Debian 12 it is a shell script around xmllint
// (package libxml2-utils), which libvirt-clients does not depend on.
const Validator = "virt-xml-validate"

// validatorTools are the programs the schema check needs, with the Debian
// package of each.
var validatorTools = []struct{ program, pkg string }{
	{Validator, "libvirt-clients"},
	{"xmllint", "libxml2-utils"},
}

// haveValidator tells whether the schema check's tools are installed; when
// one is missing it logs that the check is skipped, or fails the test when
// CI is set.
func haveValidator(t testing.TB) bool {
	t.Helper()
	for _, tool := range validatorTools {
		if _, err := exec.LookPath(tool.program); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed and CI is set: apt-get install %s", tool.program, tool.pkg)
			}
			t.Logf("schema check skipped: %s not installed (apt-get install %s)", tool.program, tool.pkg)
			return false
		}
	}
	return true
}

// CheckSchema validates the domain XML in file with virt-xml-validate. When
// it or the xmllint it runs is not installed it skips the check with a log
// line, except when the environment variable CI is set: CI must check the
// schema, so there the test fails.
func CheckSchema(t testing.TB, file string) {
	t.Helper()
	if !haveValidator(t) {
		return
	}
	bin, err := exec.LookPath(Validator)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, file, "domain").CombinedOutput()
	if err != nil {
		t.Errorf("%s %s domain: %v\n%s", Validator, file, err, out)
	}
}

// CheckSchemaBytes writes xml to a temporary file and validates it with
// CheckSchema.
func CheckSchemaBytes(t testing.TB, name string, xml []byte) {
	t.Helper()
	file := filepath.Join(t.TempDir(), name+".xml")
	if err := os.WriteFile(file, xml, 0o644); err != nil {
		t.Fatal(err)
	}
	CheckSchema(t, file)
}

// CheckRoundTrip checks that xml is canonical: unmarshalling it and
// marshalling again gives the same bytes.
func CheckRoundTrip(t testing.TB, xml []byte) {
	t.Helper()
	d, err := domain.Unmarshal(xml)
	if err != nil {
		t.Errorf("round trip: unmarshal: %v", err)
		return
	}
	again, err := domain.Marshal(d)
	if err != nil {
		t.Errorf("round trip: marshal: %v", err)
		return
	}
	if !bytes.Equal(again, xml) {
		t.Errorf("round trip: unmarshal+marshal changes the XML:\n%s", LineDiff(string(xml), string(again)))
	}
}
