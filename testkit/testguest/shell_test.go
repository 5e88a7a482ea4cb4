package testguest

import "testing"

func TestHasDisk(t *testing.T) {
	listing := "blk sda serial=data size=16777216\nblk vda serial= size=1048576\n"
	for _, c := range []struct {
		serial string
		size   int64
		want   bool
	}{
		{"data", 16 << 20, true},
		{"data", 8 << 20, false},
		{"", 1 << 20, true},
		{"dat", 16 << 20, false},
		{"other", 16 << 20, false},
	} {
		if got := HasDisk(listing, c.serial, c.size); got != c.want {
			t.Errorf("HasDisk(%q, %d) = %t, want %t", c.serial, c.size, got, c.want)
		}
	}
}
