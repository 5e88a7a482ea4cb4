package hostplan

import "errors"

// ErrNotReady is the condition of a plan refused for what the host lacks,
// not for what the VMI asks: a config source's folder without a file the
// VMI reads from it. Gathering the inputs again, once the host has
// changed, can succeed. Such an error also carries the VMI's field
// (errors.As finds the *field.Error).
var ErrNotReady = errors.New("hostplan: the host lacks something the VMI needs")

// notReadyError is a field error that is ErrNotReady.
type notReadyError struct{ err error }

func (e notReadyError) Error() string   { return e.err.Error() }
func (e notReadyError) Unwrap() []error { return []error{e.err, ErrNotReady} }

// NotReady marks err, a problem of the host found while gathering the
// inputs of a plan or checking its artifacts, as ErrNotReady.
func NotReady(err error) error {
	if err == nil || errors.Is(err, ErrNotReady) {
		return err
	}
	return notReadyError{err}
}
