package launcher

// Unit tests of the launcher's pieces that need no libvirtd.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"libvirt.org/go/libvirt"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	if c.URI != "qemu:///system" || c.Layout.StateDir != "/var/lib/vmi2libvirt/vmis" || c.Layout.ImageStore != "/var/lib/vmi2libvirt/images" {
		t.Errorf("defaults: URI %q, StateDir %q, ImageStore %q", c.URI, c.Layout.StateDir, c.Layout.ImageStore)
	}
	if c.Logger == nil || c.KeepAliveInterval != 0 || c.KeepAliveCount != 0 ||
		c.ReconnectMin != 100*time.Millisecond || c.ReconnectMax != 5*time.Second {
		t.Errorf("defaults: %+v", c)
	}
	c = Config{URI: "qemu:///session", ReconnectMin: 10 * time.Second, KeepAliveInterval: time.Second}.withDefaults()
	if c.URI != "qemu:///session" || c.ReconnectMax < c.ReconnectMin || c.KeepAliveCount != 3 {
		t.Errorf("explicit values: URI %q, backoff %s..%s", c.URI, c.ReconnectMin, c.ReconnectMax)
	}
}

func TestErrorsUnwrap(t *testing.T) {
	// A libvirt error, as the bindings return it (a value), is found as
	// *LibvirtError and *libvirt.Error through the launcher's wrapping.
	err := wrapErr(fmt.Errorf("inner: %w", libvirt.Error{Code: libvirt.ERR_NO_DOMAIN, Message: "no domain"}), "look up %s", "x")
	var lverr *libvirt.Error
	if !errors.As(err, &lverr) || lverr.Code != libvirt.ERR_NO_DOMAIN {
		t.Fatalf("errors.As(*libvirt.Error) on %v: %v", err, lverr)
	}
	var le *LibvirtError
	if !errors.As(err, &le) || le.Code != int(libvirt.ERR_NO_DOMAIN) || le.Op != "look up x" || le.Message != "no domain" {
		t.Fatalf("errors.As(*LibvirtError) on %v: %+v", err, le)
	}
	if !isNoDomain(err) {
		t.Errorf("isNoDomain(%v) = false", err)
	}
	if !strings.HasPrefix(err.Error(), "launcher: look up x: ") {
		t.Errorf("message %q", err)
	}
	if wrapErr(nil, "x") != nil {
		t.Error("wrapErr(nil) != nil")
	}
	// Wrapping twice keeps the first operation.
	twice := wrapErr(err, "sync %s", "y")
	if !errors.As(twice, &le) || le.Op != "look up x" {
		t.Errorf("twice: %v", twice)
	}

	// Validation errors are found as *field.Error.
	path := field.NewPath("spec", "domain", "devices", "disks").Index(0).Child("disk", "bus")
	inv := &InvalidError{Stage: "artifacts", Errors: field.ErrorList{
		field.NotSupported(path, "ide", []string{"virtio", "sata"}),
		field.Required(field.NewPath("spec", "domain"), ""),
	}}
	var ferr *field.Error
	var wrapped error = fmt.Errorf("sync: %w", inv)
	if !errors.As(wrapped, &ferr) || ferr.Field != path.String() || !errors.Is(wrapped, ErrInvalid) {
		t.Fatalf("errors.As(*field.Error) = %v", ferr)
	}
	if !strings.Contains(inv.Error(), "spec.domain.devices.disks[0].disk.bus") {
		t.Errorf("message %q does not name the field", inv.Error())
	}
}

// TestErrorClasses pins the class of each kind of error a reconciler sees:
// exactly one of ErrInvalid, ErrHostNotReady, ErrUnavailable and
// ErrConflict, or none for a call that does not fit the domain's state.
func TestErrorClasses(t *testing.T) {
	classes := []error{ErrInvalid, ErrHostNotReady, ErrUnavailable, ErrConflict}
	lv := func(code libvirt.ErrorNumber) error {
		return wrapErr(libvirt.Error{Code: code, Message: "m"}, "op")
	}
	fe := field.Invalid(field.NewPath("spec", "volumes").Index(0).Child("containerDisk", "image"), "x", "image not found in the image store")
	for _, c := range []struct {
		name string
		err  error
		want error // nil: no class
	}{
		{"invalid VMI", &InvalidError{Stage: "validate", Errors: field.ErrorList{fe}}, ErrInvalid},
		{"image not in the store", withVMI(notReady(fe), "ns/x"), ErrHostNotReady},
		{"libvirt refuses the domain", lv(libvirt.ERR_CONFIG_UNSUPPORTED), ErrHostNotReady},
		{"bridge missing at start", lv(libvirt.ERR_SYSTEM_ERROR), ErrHostNotReady},
		{"connection refused", unavailable(lv(libvirt.ERR_SYSTEM_ERROR)), ErrUnavailable},
		{"RPC failure", lv(libvirt.ERR_RPC), ErrUnavailable},
		{"no connection", lv(libvirt.ERR_NO_CONNECT), ErrUnavailable},
		{"waiting for a connection", unavailable(context.DeadlineExceeded), ErrUnavailable},
		{"another owner", &ConflictError{Domain: "ns_x", Owner: "node-b", Reason: "r"}, ErrConflict},
		{"pause of a domain that is off", lv(libvirt.ERR_OPERATION_INVALID), nil},
		{"no domain", lv(libvirt.ERR_NO_DOMAIN), nil},
	} {
		wrapped := fmt.Errorf("reconcile: %w", c.err)
		for _, class := range classes {
			if got := errors.Is(wrapped, class); got != (class == c.want) {
				t.Errorf("%s: errors.Is(%v) = %v", c.name, class, got)
			}
		}
	}
	var he *HostError
	if err := withVMI(notReady(fe), "ns/x"); !errors.As(err, &he) || he.VMI != "ns/x" || !strings.Contains(err.Error(), "spec.volumes[0].containerDisk.image") {
		t.Errorf("host error %v does not name the VMI and the field", err)
	}
}

func TestEventQueueNeverBlocks(t *testing.T) {
	var q eventQueue
	q.init()
	for i := range eventQueueSize + 10 {
		q.put(fmt.Sprintf("d%d", i%(eventQueueSize+5)), time.Unix(int64(i), 0))
	}
	if got := q.drops.Load(); got != 10 {
		t.Errorf("drops = %d, want 10", got)
	}
	over := q.takeOverflow()
	// The 10 that did not fit name 10 domains (d1024..d1028, then d0..d4).
	if len(over) != 10 {
		t.Errorf("overflow holds %d domains, want 10: %v", len(over), over)
	}
	if _, ok := over["d0"]; !ok {
		t.Errorf("overflow lacks d0: %v", over)
	}
	select {
	case <-q.kick:
	default:
		t.Error("no kick after an overflow")
	}
	if len(q.takeOverflow()) != 0 {
		t.Error("takeOverflow does not clear")
	}
}
