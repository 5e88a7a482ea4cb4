package convert

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

// problems collects the refusals of the items of one area (disks,
// interfaces, host devices), so that one bad item does not hide the next.
type problems struct{ errs field.ErrorList }

// add records err when it is a *field.Error or an *api.InvalidError and
// returns nil, to go on with the next item; any other error is returned, to
// end the conversion.
func (p *problems) add(err error) error {
	switch e := err.(type) {
	case nil:
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

// next takes an area's result: nil, or a refusal (a *field.Error or an
// *api.InvalidError), which is recorded, lets the conversion go on to the
// next area; any other error is kept in c.fatal and ends it. Each refusal
// comes from the one area that owns its field, so none is recorded twice.
func (c *converter) next(err error) bool {
	switch e := err.(type) {
	case nil:
	case *field.Error:
		c.errs = append(c.errs, e)
	case *api.InvalidError:
		c.errs = append(c.errs, e.Errors...)
	default:
		c.fatal = err
		return false
	}
	return true
}
