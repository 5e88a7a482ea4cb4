package vcpumask

import (
	"strings"
	"testing"
)

// Parse reads the masks of KubeVirt's documentation and tests as
// ParseCPUMask and IsEnabled do, the order of terms aside, and refuses
// what ParseCPUMask refuses and the leading zeros libvirt reads otherwise.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		mask  string
		names string // the vCPUs 0-7 named, as digits
		err   string // a part of the error, for a refused mask
	}{
		{"", "01234567", ""},
		{"0-3,^1", "023", ""},
		{"^1,0-3", "023", ""},
		{"0,2,3", "023", ""},
		{"2-3", "23", ""},
		{"1,^1", "", ""},
		{"^1,1", "", ""},
		{"^1", "", ""},
		{" 1 , 2 ", "12", ""},
		{"01-03", "123", ""},
		{"0", "0", ""},
		{"3-3", "3", ""},
		{"1 - 2", "", "is not a vCPU"},
		{"1,,2", "", "is not a vCPU"},
		{" ", "", "is not a vCPU"},
		{"1-", "", "is not a vCPU"},
		{"-1", "", "is not a vCPU"},
		{"^1-2", "", "is not a vCPU"},
		{"a", "", "is not a vCPU"},
		{"3-1", "", "starts above its end"},
		{"99999999999999999999", "", "is not a vCPU number"},
		{"01", "", "leading zero"},
		{"^01", "", "leading zero"},
	} {
		m, err := Parse(c.mask)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Parse(%q): %v, want an error with %q", c.mask, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", c.mask, err)
			continue
		}
		var names string
		for id := range uint64(8) {
			if m.Names(id) {
				names += string(rune('0' + id))
			}
		}
		if names != c.names {
			t.Errorf("Parse(%q) names %q, want %q", c.mask, names, c.names)
		}
	}
	if m, _ := Parse("0-2,^7,5"); m.Highest() != 7 || m.All() {
		t.Errorf("Parse(\"0-2,^7,5\"): highest %d, all %v; want 7, false", m.Highest(), m.All())
	}
}
