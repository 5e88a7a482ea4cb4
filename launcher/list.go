package launcher

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
)

// List returns the VMIs this launcher owns, as libvirt knows them: one per
// domain whose marks name this launcher's owner, with the VMI's namespace,
// name and UID (ObjectMeta) and its status (Status), in the order libvirt
// lists them. It finds what no caller remembers — the domain of a VMI
// deleted while its controller was down — so that it can be removed with
// Delete. Domains of other owners are not listed.
//
// It costs one libvirt call for the VMIs whose status the launcher knows
// to be current (none of their domains' events came since it was read, on
// the same connection), and reads the others.
func (l *Launcher) List(ctx context.Context) ([]*v1.VirtualMachineInstance, error) {
	var names []string
	err := l.read(ctx, func(c *libvirt.Connect) error {
		doms, err := c.ListAllDomains(0)
		if err != nil {
			return wrapErr(err, "list domains")
		}
		for i := range doms {
			if name, err := doms[i].GetName(); err == nil {
				names = append(names, name)
			}
			doms[i].Free()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	gen := l.generation()
	out := make([]*v1.VirtualMachineInstance, 0, len(names))
	for _, name := range names {
		st := l.lookupState(name)
		if st != nil {
			if vmi, ok := st.current(gen); ok {
				out = append(out, vmi)
				continue
			}
		}
		m, err := l.marksOf(ctx, name)
		if err != nil {
			return nil, err
		}
		if m == nil || m.Owner != l.cfg.Owner {
			continue
		}
		st = l.stateFor(m.VMI.Namespace, m.VMI.Name, m.VMI.UID)
		status, err := l.publish(ctx, st, time.Time{}, false, false)
		if err != nil {
			return nil, err
		}
		out = append(out, listed(m.VMI.Namespace, m.VMI.Name, m.VMI.UID, status))
	}
	return out, nil
}

// current returns st's VMI as List lists it when its published status is
// current on connection gen: read on it, and no event of the domain since.
func (st *vmiState) current(gen uint64) (*v1.VirtualMachineInstance, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.published || st.deleted || st.readGen != gen || st.readEvents != st.events.Load() {
		return nil, false
	}
	return listed(st.namespace, st.vmi, st.uid.Load(), *st.status.DeepCopy()), true
}

// listed is a VMI as List lists it.
func listed(namespace, name string, uid types.UID, status v1.VirtualMachineInstanceStatus) *v1.VirtualMachineInstance {
	return &v1.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindVMI},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: uid},
		Status:     status,
	}
}

// marksOf reads the marks of the domain called name, nil when it has none
// or is gone.
func (l *Launcher) marksOf(ctx context.Context, name string) (*hostplan.Marks, error) {
	cur, err := l.current(ctx, name)
	if err != nil {
		return nil, err
	}
	return cur.marks, nil
}

// listOwned returns the marks of every domain this launcher owns.
func (l *Launcher) listOwned(ctx context.Context) ([]*hostplan.Marks, error) {
	all, err := l.allMarks(ctx)
	if err != nil {
		return nil, err
	}
	var owned []*hostplan.Marks
	for _, m := range all {
		if m.Owner == l.cfg.Owner {
			owned = append(owned, m)
		}
	}
	return owned, nil
}

// allMarks returns the marks of every domain on the libvirtd that a
// launcher defined, whoever its owner.
func (l *Launcher) allMarks(ctx context.Context) ([]*hostplan.Marks, error) {
	var all []*hostplan.Marks
	err := l.read(ctx, func(c *libvirt.Connect) error {
		doms, err := c.ListAllDomains(0)
		if err != nil {
			return wrapErr(err, "list domains")
		}
		for i := range doms {
			raw, err := doms[i].GetMetadata(libvirt.DOMAIN_METADATA_ELEMENT, hostplan.MetadataNS, libvirt.DOMAIN_AFFECT_CONFIG)
			doms[i].Free()
			if err != nil {
				continue // no element of ours (or the domain went away)
			}
			if m, err := hostplan.ParseMarks(raw); err == nil && m != nil {
				all = append(all, m)
			}
		}
		return nil
	})
	return all, err
}

// adopt takes over the domains this launcher's owner defined before: their
// statuses are published, and the deadline of a graceful shutdown under
// way is kept. A domain whose start a dead launcher left unconfirmed, or
// whose end libvirt forgot, is judged and recorded here (see hostplan.Judge).
func (l *Launcher) adopt(ctx context.Context) error {
	owned, err := l.listOwned(ctx)
	if err != nil {
		return err
	}
	for _, m := range owned {
		if m.Migration != nil && !m.Migration.Finished() && l.settleMigration(ctx, m) {
			continue // it migrated away, or never arrived (migrate.go)
		}
		st := l.stateFor(m.VMI.Namespace, m.VMI.Name, m.VMI.UID)
		status, err := l.publish(ctx, st, time.Time{}, false, false)
		if err != nil {
			return err
		}
		if m.Shutdown != nil && status.Phase == v1.Running {
			l.armDeadline(st, m.Shutdown.Deadline)
		}
	}
	if len(owned) > 0 {
		l.log.Info("adopted the VMIs this owner defined before", "owner", l.cfg.Owner, "count", len(owned))
	}
	return nil
}
