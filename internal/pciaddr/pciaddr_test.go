package pciaddr

import (
	"fmt"
	"testing"
)

func TestParse(t *testing.T) {
	a, ok := Parse("000A:fF:1f.7")
	if !ok || a != (Address{Domain: 10, Bus: 255, Slot: 31, Function: 7}) {
		t.Errorf("Parse(000A:fF:1f.7) = %+v, %v", a, ok)
	}
	for _, bad := range []string{"", "0000:00:01", "0000:00:01.8", "000:00:01.0", "0000:00:0g.0", " 0000:00:01.0", "0000:00:01.0\n"} {
		if _, ok := Parse(bad); ok {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func ExampleParse() {
	a, ok := Parse("0000:81:00.1")
	fmt.Println(a.Bus, a.Slot, a.Function, ok)
	// Output: 129 0 1 true
}
