package hostfiles

import (
	"strings"
	"syscall"
	"testing"
)

func TestDescribeOwner(t *testing.T) {
	if p := describeOwner(syscall.Stat_t{Uid: 0, Gid: 0, Mode: 0o600}); !strings.HasPrefix(p, "root:root 0600") {
		t.Errorf("describeOwner = %q", p)
	}
}
