package launcher

import (
	"errors"
	"fmt"

	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// The classes of the launcher's errors. Each error a Launcher returns for a
// VMI is at most one of them (errors.Is); a reconciler acts on the class:
//
//	ErrInvalid       the VMI cannot run as it is: give up until it changes
//	ErrHostNotReady  the host lacks something the VMI needs: retry later
//	ErrUnavailable   libvirt cannot be reached: retry soon
//	ErrConflict      the domain is not this launcher's to change: report it
//	ErrRestartRequired  a running VMI's spec changed in a way only a restart applies (live.go)
//
// None of them needs the cgo binding: errors.As(err, &*LibvirtError) gives
// libvirt's code and message, and errors.As(err, &*libvirt.Error) still
// works for those who import the binding.
var (
	// ErrInvalid is pipeline.ErrInvalid: the VMI is refused by validation
	// or by the converter with this launcher's options (an unmapped
	// network or host device, a hostDisk outside the allowed folders...).
	// The error is an *InvalidError listing every field error. Permanent:
	// the same VMI is refused again.
	ErrInvalid = pipeline.ErrInvalid

	// ErrHostNotReady: something the VMI needs is not on the host yet, or
	// libvirt refused it on this host: an image not in the store, a claim's
	// disk, a hostDisk's folder, a config source folder, a folder QEMU
	// cannot reach, a bridge or libvirt network, a device libvirt cannot
	// give. The error names the VMI's field where it can (*HostError) or
	// carries libvirt's (*LibvirtError). Retrying can succeed once the host
	// has changed.
	ErrHostNotReady = errors.New("launcher: host not ready")

	// ErrUnavailable: libvirt cannot be reached (no daemon, a lost
	// connection that is being re-established). Transient: retry soon.
	ErrUnavailable = errors.New("launcher: libvirt unavailable")

	// ErrConflict: the VMI's domain is not this launcher's to change: it
	// belongs to another owner (Config.Owner), was not made by a launcher
	// at all, or still runs an earlier VMI of the same name (another UID).
	// Retrying does not help until that domain is gone.
	ErrConflict = errors.New("launcher: domain not owned by this launcher")

	// ErrClosed is returned by the calls of a Launcher after Close.
	ErrClosed = errors.New("launcher: closed")

	// ErrNoDomain is returned by actions on a VMI that has no domain (it
	// was never synced, or it was deleted).
	ErrNoDomain = errors.New("launcher: the VMI has no domain")

	// ErrDeleted is returned by a Sync that Delete overtook: Delete of the
	// same VMI was called while the Sync waited to begin, and ran first,
	// so the Sync made nothing.
	ErrDeleted = errors.New("launcher: the VMI was deleted while Sync ran")
)

// InvalidError is pipeline.InvalidError: every field error of a VMI that
// validation or the converter refuses, at the paths of the VMI.
type InvalidError = pipeline.InvalidError

// HostError says what a VMI needs that the host does not have (yet). It is
// ErrHostNotReady, and unwraps to its cause, often a *field.Error naming the
// VMI's field that asks for it (spec.volumes[0].containerDisk.image).
type HostError struct {
	// VMI is the VMI's namespace/name.
	VMI string
	Err error
}

// Error says which VMI lacks what.
func (e *HostError) Error() string {
	return fmt.Sprintf("launcher: host not ready for %s: %v", e.VMI, e.Err)
}

// Is reports ErrHostNotReady.
func (e *HostError) Is(target error) bool { return target == ErrHostNotReady }

// Unwrap returns the cause.
func (e *HostError) Unwrap() error { return e.Err }

// notReady marks err, a problem of the host found while planning a VMI's
// artifacts, as a *HostError (its VMI is filled in by the caller).
func notReady(err error) error {
	if err == nil {
		return nil
	}
	return &HostError{Err: err}
}

// withVMI names the VMI of a *HostError in err's chain that has none.
func withVMI(err error, key string) error {
	var he *HostError
	if errors.As(err, &he) && he.VMI == "" {
		he.VMI = key
	}
	return err
}

// ConflictError is ErrConflict, for the VMI's domain: why it is not this
// launcher's.
type ConflictError struct {
	// Domain is the libvirt domain's name.
	Domain string
	// Owner is the owner recorded in the domain; "" when it has none (it
	// was not made by a launcher).
	Owner string
	// Reason says what conflicts.
	Reason string
}

// Error names the domain and its owner.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("launcher: domain %s: %s", e.Domain, e.Reason)
}

// Is reports ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// LibvirtError is an error libvirt returned, as data: its code, domain and
// message, without the cgo binding's type. It is ErrUnavailable for the
// codes of a lost or refused connection, ErrHostNotReady for libvirt
// refusing what the host cannot do now, and neither for a call that does
// not fit the domain's state (ERR_OPERATION_INVALID: pausing a domain that
// is off) or names nothing (ERR_NO_DOMAIN). Unwrap gives *libvirt.Error.
type LibvirtError struct {
	// Op is what the launcher was doing: "define domain default_tiny".
	Op string
	// Code and Domain are libvirt's virErrorNumber and virErrorDomain.
	Code, Domain int
	// Message is libvirt's message.
	Message string

	err libvirt.Error
	// lost is set when the call failed because the connection was lost:
	// the error is ErrUnavailable whatever its code.
	lost bool
}

// Error is the operation and libvirt's message.
func (e *LibvirtError) Error() string {
	return "launcher: " + e.Op + ": " + e.err.Error()
}

// Is reports the error's class.
func (e *LibvirtError) Is(target error) bool {
	code := libvirt.ErrorNumber(e.Code)
	switch target {
	case ErrUnavailable:
		return e.lost || connectionErrors[code]
	case ErrHostNotReady:
		return !e.lost && !connectionErrors[code] && !callerErrors[code]
	}
	return false
}

// unavailable makes err, from a call on a connection that is gone (or
// that could not be made), ErrUnavailable and nothing else.
func unavailable(err error) error {
	var le *LibvirtError
	if errors.As(err, &le) {
		le.lost = true
		return err
	}
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// Unwrap returns libvirt's own error.
func (e *LibvirtError) Unwrap() error { return &e.err }

// connectionErrors are the libvirt codes of a connection that is lost or
// refused: ErrUnavailable. The launcher also checks IsAlive after them.
var connectionErrors = map[libvirt.ErrorNumber]bool{
	libvirt.ERR_NO_CONNECT:        true,
	libvirt.ERR_INVALID_CONN:      true,
	libvirt.ERR_RPC:               true,
	libvirt.ERR_AUTH_FAILED:       true,
	libvirt.ERR_AUTH_CANCELLED:    true,
	libvirt.ERR_AUTH_UNAVAILABLE:  true,
	libvirt.ERR_OPERATION_TIMEOUT: true,
}

// callerErrors are the libvirt codes that say a call does not fit the
// domain as it is: no class.
var callerErrors = map[libvirt.ErrorNumber]bool{
	libvirt.ERR_OPERATION_INVALID: true,
	libvirt.ERR_NO_DOMAIN:         true,
	libvirt.ERR_INVALID_ARG:       true,
}

// wrapErr wraps err with what the launcher was doing: a libvirt error
// becomes a *LibvirtError, anything else is wrapped with %w.
func wrapErr(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	op := fmt.Sprintf(format, args...)
	var le *LibvirtError
	var p *libvirt.Error
	var v libvirt.Error
	switch {
	case errors.As(err, &le):
		return fmt.Errorf("launcher: %s: %w", op, err)
	case errors.As(err, &p):
		v = *p
	case errors.As(err, &v):
	default:
		return fmt.Errorf("launcher: %s: %w", op, err)
	}
	return &LibvirtError{Op: op, Code: int(v.Code), Domain: int(v.Domain), Message: v.Message, err: v}
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

// isNotRunning tells whether err is libvirt saying the domain is not
// running.
func isNotRunning(err error) bool {
	return libvirtCode(err) == libvirt.ERR_OPERATION_INVALID
}

// mayBeConnectionLoss reports whether err may come from a lost connection;
// the launcher then checks with IsAlive.
func mayBeConnectionLoss(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	code := libvirtCode(err)
	return connectionErrors[code] || code == libvirt.ERR_SYSTEM_ERROR || code == libvirt.ERR_INTERNAL_ERROR
}
