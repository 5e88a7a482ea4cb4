package convert

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Error is what Convert returns for a VMI it cannot honour: every problem
// it found, each a *field.Error naming the VMI field, in the order of the
// domain's areas (convert.go) and, within an area, of the VMI's lists.
// errors.As finds each *field.Error (Unwrap).
type Error struct {
	Errs field.ErrorList
}

// Error prints one problem as its *field.Error does, and several as
// field.ErrorList's aggregate ("[a, b, c]").
func (e *Error) Error() string {
	if len(e.Errs) == 1 {
		return e.Errs[0].Error()
	}
	return e.Errs.ToAggregate().Error()
}

// Unwrap returns each field error.
func (e *Error) Unwrap() []error {
	out := make([]error, len(e.Errs))
	for i, fe := range e.Errs {
		out[i] = fe
	}
	return out
}

// problems collects the refusals of the items of one area (disks,
// interfaces, host devices), so that one bad item does not hide the next.
type problems struct{ errs field.ErrorList }

// add records err when it is a *field.Error or an *Error and returns nil,
// to go on with the next item; any other error is returned, to end the
// conversion.
func (p *problems) add(err error) error {
	switch e := err.(type) {
	case *field.Error:
		p.errs = append(p.errs, e)
	case *Error:
		p.errs = append(p.errs, e.Errs...)
	default:
		return err
	}
	return nil
}

// err returns the problems as an *Error, or nil when there are none.
func (p *problems) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	return &Error{Errs: p.errs}
}

// next takes an area's result: nil or a refusal (recorded by refuse)
// lets the conversion go on to the next area; any other error is kept
// in c.fatal and ends it.
func (c *converter) next(err error) bool {
	if err == nil {
		return true
	}
	if err := c.refuse(err); err != nil {
		c.fatal = err
		return false
	}
	return true
}

// refuse records a problem of the VMI and tells the caller to go on with
// the VMI's next area: it returns nil for a *field.Error (or an
// *Error), and err itself for anything else, which ends the conversion. A
// problem already recorded (an SR-IOV interface that both the interfaces
// and the host devices areas look up) is recorded once.
func (c *converter) refuse(err error) error {
	var list field.ErrorList
	switch e := err.(type) {
	case *field.Error:
		list = field.ErrorList{e}
	case *Error:
		list = e.Errs
	default:
		return err
	}
	for _, fe := range list {
		if !c.refused(fe) {
			c.errs = append(c.errs, fe)
		}
	}
	return nil
}

// refused tells whether the same problem was recorded already.
func (c *converter) refused(fe *field.Error) bool {
	for _, prev := range c.errs {
		if prev.Type == fe.Type && prev.Field == fe.Field && prev.Detail == fe.Detail {
			return true
		}
	}
	return false
}
