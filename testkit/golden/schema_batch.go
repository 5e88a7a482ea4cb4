package golden

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// DomainSchema is the schema virt-xml-validate checks a domain against
// (libvirt-clients' script runs xmllint --relaxng on it).
const DomainSchema = "/usr/share/libvirt/schemas/domain.rng"

// CheckSchemaFiles validates many domain XML files at once: it runs the
// check virt-xml-validate FILE domain runs, xmllint --noout --relaxng
// DomainSchema, on all of them in one process (virt-xml-validate parses
// the schema anew for every file, a tenth of a second each). Each invalid
// file is a test error with xmllint's words for it. Missing tools skip the
// check as CheckSchema does (and fail it under CI).
func CheckSchemaFiles(t testing.TB, files []string) {
	t.Helper()
	if len(files) == 0 || !haveValidator(t) {
		return
	}
	invalid, problems, err := invalidDomainFiles(files)
	for _, f := range invalid {
		t.Errorf("%s does not validate against %s", f, DomainSchema)
	}
	if err != nil {
		t.Error(err)
	}
	if len(problems) > 0 {
		t.Logf("xmllint:\n%s", strings.Join(problems, "\n"))
	}
}

// invalidDomainFiles validates files with xmllint against DomainSchema and
// returns those that fail, with what xmllint said about them; err is set
// when xmllint failed without naming a file that fails.
func invalidDomainFiles(files []string) (invalid, problems []string, err error) {
	// Batches keep the command line well within the kernel's limit.
	const batch = 500
	for start := 0; start < len(files); start += batch {
		part := files[start:min(start+batch, len(files))]
		out, runErr := exec.Command("xmllint", append([]string{"--noout", "--relaxng", DomainSchema}, part...)...).CombinedOutput()
		if runErr == nil {
			continue
		}
		// xmllint names each file: "F validates" or "F fails to validate",
		// after the errors it found in F.
		failed := 0
		for _, f := range part {
			if strings.Contains(string(out), f+" fails to validate") {
				failed++
				invalid = append(invalid, f)
			}
		}
		if failed == 0 {
			err = fmt.Errorf("xmllint --relaxng %s: %v: %s", DomainSchema, runErr, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if !strings.HasSuffix(line, " validates") {
				problems = append(problems, line)
			}
		}
	}
	return invalid, problems, err
}
