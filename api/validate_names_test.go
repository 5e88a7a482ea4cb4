package api

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// nameChecks pairs each quick name check with the Kubernetes function it
// stands for.
var nameChecks = []struct {
	name       string
	quick, k8s func(string) []string
}{
	{"IsDNS1123Label", dns1123Label, validation.IsDNS1123Label},
	{"IsDNS1123Subdomain", dns1123Subdomain, validation.IsDNS1123Subdomain},
	{"IsQualifiedName", qualifiedName, validation.IsQualifiedName},
	{"IsValidLabelValue", labelValue, validation.IsValidLabelValue},
}

// checkNames fails when a quick check's answer for s is not the
// Kubernetes function's.
func checkNames(t *testing.T, s string) {
	for _, c := range nameChecks {
		if got, want := c.quick(s), c.k8s(s); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s(%q) = %q, Kubernetes says %q", c.name, s, got, want)
		}
	}
}

// TestNameChecks: every string of up to 4 characters over an alphabet of
// every kind of character the patterns distinguish, and strings at the
// length limits, get the Kubernetes functions' answers.
func TestNameChecks(t *testing.T) {
	const alphabet = "aZ0-_./é"
	var walk func(prefix string, n int)
	walk = func(prefix string, n int) {
		checkNames(t, prefix)
		if n == 0 {
			return
		}
		for _, r := range alphabet {
			walk(prefix+string(r), n-1)
		}
	}
	walk("", 4)
	for _, n := range []int{62, 63, 64, 252, 253, 254} {
		for _, s := range []string{strings.Repeat("a", n), strings.Repeat("a", n-2) + ".b", "x.io/" + strings.Repeat("b", n), strings.Repeat("c", n) + "/d"} {
			checkNames(t, s)
		}
	}
}

// FuzzNameChecks compares the quick checks with the Kubernetes functions
// on any string.
func FuzzNameChecks(f *testing.F) {
	for _, s := range []string{"kubevirt.io/domain", "my-vm", "a.b.c", "A_b-c.D", "-x", "x-", "a..b", "a/b/c", "/x", "x/"} {
		f.Add(s)
	}
	f.Fuzz(checkNames)
}
