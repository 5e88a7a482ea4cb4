package nodeapi

import "testing"

// HypervStrictCheck turns on its Scheduling; no gate is KubeVirt's
// default; a gate that changes no scheduling, or a misspelt one, is an
// error.
func TestParseFeatureGates(t *testing.T) {
	for _, c := range []struct {
		list string
		want Scheduling
		err  bool
	}{
		{"", Scheduling{}, false},
		{"HypervStrictCheck", Scheduling{HypervStrictCheck: true}, false},
		{"HypervStrictCheck,HypervStrictCheck", Scheduling{HypervStrictCheck: true}, false},
		{"hypervstrictcheck", Scheduling{}, true},
		{"LiveMigration", Scheduling{}, true},
		{",", Scheduling{}, true},
	} {
		got, err := ParseFeatureGates(c.list)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("ParseFeatureGates(%q) = %+v, %v; want %+v, error %v", c.list, got, err, c.want, c.err)
		}
	}
}
