package launcher

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
func (l *Launcher) List(ctx context.Context) ([]*v1.VirtualMachineInstance, error) {
	owned, err := l.listOwned(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*v1.VirtualMachineInstance, 0, len(owned))
	for _, m := range owned {
		st := l.stateFor(m.VMI.Namespace, m.VMI.Name, m.VMI.UID)
		status, err := l.publish(ctx, st, time.Time{}, false)
		if err != nil {
			return nil, err
		}
		out = append(out, &v1.VirtualMachineInstance{
			TypeMeta:   metav1.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindVMI},
			ObjectMeta: metav1.ObjectMeta{Namespace: m.VMI.Namespace, Name: m.VMI.Name, UID: m.VMI.UID},
			Status:     status,
		})
	}
	return out, nil
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
		st := l.stateFor(m.VMI.Namespace, m.VMI.Name, m.VMI.UID)
		status, err := l.publish(ctx, st, time.Time{}, false)
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
