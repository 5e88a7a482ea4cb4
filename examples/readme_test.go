package examples_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs are the documents whose go test commands TestDocumentedTestFilters
// checks, relative to this folder.
var docs = []string{"../README.md", "../convert/testdata/README.md"}

// goTestRun finds "go test ./PKG … -run PATTERN" in a document; a command
// that also runs benchmarks uses -run to exclude tests and is not checked.
var goTestRun = regexp.MustCompile("go test (\\./\\S*)[^\\n]*?-run '?([^'\\s`]+)'?")

// TestDocumentedTestFilters: every -run filter the READMEs document selects
// tests. A documented command that runs no test is a bug: it passes
// without checking anything. Subtest filters are checked for TestGolden,
// whose subtests are the case folders of convert/testdata.
func TestDocumentedTestFilters(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test -list")
	}
	checked := 0
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			m := goTestRun.FindStringSubmatch(line)
			if m == nil || strings.Contains(line, "-bench") {
				continue
			}
			pkg, pattern := m[1], m[2]
			top, sub, _ := strings.Cut(pattern, "/")
			cmd := exec.Command("go", "test", "-list", top, pkg)
			cmd.Dir = ".."
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s: %s: go test -list: %v\n%s", doc, line, err, out)
				continue
			}
			var tests []string
			for _, l := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(l, "Test") {
					tests = append(tests, l)
				}
			}
			if len(tests) == 0 {
				t.Errorf("%s: %q: -run %s matches no test of %s", doc, line, top, pkg)
				continue
			}
			if sub != "" {
				if pkg != "./convert" || top != "TestGolden" {
					t.Errorf("%s: %q: this test cannot check a subtest filter of %s %s", doc, line, pkg, top)
					continue
				}
				cases, _ := filepath.Glob("../convert/testdata/*/vmi.yaml")
				re := regexp.MustCompile(sub)
				n := 0
				for _, c := range cases {
					if re.MatchString(filepath.Base(filepath.Dir(c))) {
						n++
					}
				}
				if n == 0 {
					t.Errorf("%s: %q: -run %s matches no case folder of convert/testdata", doc, line, pattern)
				}
			}
			checked++
		}
	}
	if checked < 3 {
		t.Errorf("checked %d documented filters; the pattern no longer finds them", checked)
	}
}
