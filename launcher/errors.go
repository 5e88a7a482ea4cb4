package launcher

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"libvirt.org/go/libvirt"
)

// ErrClosed is returned by the calls of a Launcher after Close.
var ErrClosed = errors.New("launcher: closed")

// ErrNoDomain is returned by actions on a VMI that has no domain (it was
// never synced, or it was deleted).
var ErrNoDomain = errors.New("launcher: the VMI has no domain")

// ErrDeleted is returned by a Sync that Delete overtook: Delete of the same
// VMI was called while the Sync was under way and ran first, so the Sync
// made nothing.
var ErrDeleted = errors.New("launcher: the VMI was deleted while Sync ran")

// InvalidError is returned by Sync for a VMI that api.Validate refuses. It
// unwraps to each *field.Error, so errors.As finds them.
type InvalidError struct {
	// VMI is the namespace/name of the VMI.
	VMI    string
	Errors field.ErrorList
}

// Error lists the field errors.
func (e *InvalidError) Error() string {
	return fmt.Sprintf("launcher: VMI %s is invalid: %v", e.VMI, e.Errors.ToAggregate())
}

// Unwrap returns the field errors.
func (e *InvalidError) Unwrap() []error {
	errs := make([]error, len(e.Errors))
	for i, fe := range e.Errors {
		errs[i] = fe
	}
	return errs
}

// wrapErr wraps err with what the launcher was doing. A libvirt error is
// wrapped as *libvirt.Error, so errors.As(err, &lverr) with
// lverr *libvirt.Error finds it.
func wrapErr(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	var v libvirt.Error
	if errors.As(err, &v) {
		var p *libvirt.Error
		if !errors.As(err, &p) {
			err = &v
		}
	}
	return fmt.Errorf("launcher: "+format+": %w", append(args, err)...)
}

// libvirtCode returns the libvirt error code in err's chain, or ERR_OK.
func libvirtCode(err error) libvirt.ErrorNumber {
	var p *libvirt.Error
	if errors.As(err, &p) {
		return p.Code
	}
	var v libvirt.Error
	if errors.As(err, &v) {
		return v.Code
	}
	return libvirt.ERR_OK
}

// isNoDomain reports whether err says the domain does not exist.
func isNoDomain(err error) bool {
	return libvirtCode(err) == libvirt.ERR_NO_DOMAIN
}

// connectionErrors are the libvirt codes that may mean the connection is
// gone; the launcher then checks with IsAlive.
var connectionErrors = map[libvirt.ErrorNumber]bool{
	libvirt.ERR_NO_CONNECT:     true,
	libvirt.ERR_INVALID_CONN:   true,
	libvirt.ERR_RPC:            true,
	libvirt.ERR_SYSTEM_ERROR:   true,
	libvirt.ERR_INTERNAL_ERROR: true,
	libvirt.ERR_AUTH_CANCELLED: true,
}

// mayBeConnectionLoss reports whether err may come from a lost connection.
func mayBeConnectionLoss(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, errNotConnected) {
		return true
	}
	return connectionErrors[libvirtCode(err)]
}

// errNotConnected is returned while the launcher has no connection.
var errNotConnected = errors.New("launcher: not connected to libvirt")

// isMemoryHotplugRefusal reports whether a define error is libvirt refusing
// <maxMemory> without memory slots, as libvirt before virtio-mem support
// without slots does (Debian 12's 9.0 among them): its schema refuses the
// element ("Extra element maxMemory in interleave"), or, without schema
// validation, its parser ("both maximum memory size and memory slot count
// must be specified").
func isMemoryHotplugRefusal(err error) bool {
	var p *libvirt.Error
	if !errors.As(err, &p) {
		return false
	}
	m := strings.ToLower(p.Message)
	return strings.Contains(m, "maxmemory") || (strings.Contains(m, "slot") && strings.Contains(m, "memory"))
}
