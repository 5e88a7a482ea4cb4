package convert

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

// problems collects the refusals of the items of one area (disks,
// interfaces, host devices), so that one bad item does not hide the next.
type problems struct{ errs field.ErrorList }

// add records err when it is a *field.Error or an *api.InvalidError and
// returns nil,
// to go on with the next item; any other error is returned, to end the
// conversion.
func (p *problems) add(err error) error {
	switch e := err.(type) {
	case *field.Error:
		p.errs = append(p.errs, e)
	case *api.InvalidError:
		p.errs = append(p.errs, e.Errors...)
	default:
		return err
	}
	return nil
}

// err returns the problems as an *api.InvalidError, or nil when there are
// none.
func (p *problems) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	return invalid(p.errs)
}

// invalid is Convert's error for a VMI it cannot honour: every problem,
// each a *field.Error naming its path in the VMI.
func invalid(errs field.ErrorList) *api.InvalidError {
	return &api.InvalidError{Kind: api.KindVMI, Stage: api.StageConvert, Errors: errs}
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
// *api.InvalidError), and err itself for anything else, which ends the conversion. A
// problem already recorded (an SR-IOV interface that both the interfaces
// and the host devices areas look up) is recorded once.
func (c *converter) refuse(err error) error {
	var list field.ErrorList
	switch e := err.(type) {
	case *field.Error:
		list = field.ErrorList{e}
	case *api.InvalidError:
		list = e.Errors
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
