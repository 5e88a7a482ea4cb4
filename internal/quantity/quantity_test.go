package quantity

import (
	"fmt"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"128Mi", true},
		{"1.5Gi", true},
		{"2", true},
		{"500m", true},
		{"1e3", true},
		{"1E-9", true},
		{"1e1000", true},
		{"1e-1000", true},
		{" 1e+1000 ", true},
		{"-1e3", true},
		{"1.5.5Gi", true}, // not a quantity: ParseQuantity's to say
		{"1ex", true},     // likewise
		{"1e1001", false},
		{"1e-1001", false},
		{"922e372036854775808", false}, // wraps to 10^-1802338304 in int32
		{"1e-2000000000", false},
		{"1e99999999999999999999", false}, // beyond int64
		{strings.Repeat("1", MaxLength), true},
		{strings.Repeat("1", MaxLength+1), false},
		{"0." + strings.Repeat("0", MaxLength) + "1", false},
	} {
		err := Check(c.in)
		if (err == nil) != c.ok {
			t.Errorf("Check(%q) = %v, want ok=%v", c.in, err, c.ok)
		}
	}
}

// TestParseRefusesBeforeParsing would run for hours if Parse handed the
// text to resource.ParseQuantity.
func TestParseRefusesBeforeParsing(t *testing.T) {
	if _, err := Parse("922e372036854775808"); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("got %v, want the exponent out of range", err)
	}
	q, err := Parse("1.5Gi")
	if err != nil || q.Value() != 3<<29 {
		t.Fatalf("Parse(1.5Gi) = %v, %v", q.String(), err)
	}
}

func ExampleCheck() {
	fmt.Println(Check("128Mi"))
	fmt.Println(Check("922e372036854775808"))
	// Output:
	// <nil>
	// the exponent 372036854775808 is out of range: at most 1000 either way
}
