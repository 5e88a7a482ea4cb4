package agent

import (
	"context"
	"log/slog"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

// vmiEvent is what the launcher's side feeds the VMI controller through
// its channel source: the namespace and name of a VMI to reconcile.
type vmiEvent = event.TypedGenericEvent[*v1.VirtualMachineInstance]

// eventFor is the event that makes the controller reconcile key.
func eventFor(key types.NamespacedName) vmiEvent {
	return vmiEvent{Object: &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
}

// launcherView is what the launcher last published of each VMI it owns,
// as its Watch channel delivered it, by namespace/name: the status
// statusReconciler writes (the event's own, with no second reading of
// libvirt), and the phase with which vmiReconciler decides how to take a
// VMI whose object is gone off the host (the launcher's Status and
// Shutdown would publish a status for a VMI that has no domain). It holds
// every adopted VMI before a controller hears of it: the events that fill
// it are the ones that make the controllers reconcile.
type launcherView struct {
	mu       sync.Mutex
	statuses map[types.NamespacedName]published
}

// published is a VMI's status as the launcher published it, with the UID
// of the VMI it published it for.
type published struct {
	uid    types.UID
	status v1.VirtualMachineInstanceStatus
}

func newLauncherView() *launcherView {
	return &launcherView{statuses: map[types.NamespacedName]published{}}
}

func (v *launcherView) set(key types.NamespacedName, uid types.UID, status v1.VirtualMachineInstanceStatus) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.statuses[key] = published{uid: uid, status: status}
}

func (v *launcherView) remove(key types.NamespacedName) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.statuses, key)
}

// status returns the launcher's last status of the VMI key with uid (any
// UID when the launcher did not record one), and whether there is one.
func (v *launcherView) status(key types.NamespacedName, uid types.UID) (v1.VirtualMachineInstanceStatus, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.statuses[key]
	if !ok || (p.uid != "" && p.uid != uid) {
		return v1.VirtualMachineInstanceStatus{}, false
	}
	return *p.status.DeepCopy(), true
}

// running tells whether the launcher last reported key Running.
func (v *launcherView) running(key types.NamespacedName) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.statuses[key].status.Phase == v1.Running
}

// forwardWatch feeds the controllers from the launcher's Watch channel
// until ctx ends: every status change of every VMI the launcher owns
// (those adopted at start first) makes each controller of outs reconcile
// that VMI, so status follows libvirt's events. A VMI the launcher deleted
// is only forgotten.
func forwardWatch(ctx context.Context, l *launcher.Launcher, view *launcherView, outs ...chan<- vmiEvent) error {
	for ev := range l.Watch(ctx) {
		key := types.NamespacedName{Namespace: ev.Namespace, Name: ev.Name}
		if ev.Deleted {
			view.remove(key)
			continue
		}
		view.set(key, ev.UID, ev.Status)
		for _, out := range outs {
			select {
			case out <- eventFor(key):
			case <-ctx.Done():
				return nil
			}
		}
	}
	return nil
}

// sweepOrphans runs once the agent's cache holds this node's VMIs: it
// lists the domains the launcher owns (launcher.List) and sends the
// controller each whose VMI is gone — deleted while no agent ran, its
// finalizer removed by hand, bound to another node. The controller then
// shuts it down and removes it. It logs what it found. (A domain whose
// name another VMI took meanwhile is removed by that VMI's own reconcile:
// its Sync meets it.)
func sweepOrphans(ctx context.Context, l *launcher.Launcher, vmis cache.Cache, view *launcherView, out chan<- vmiEvent, log *slog.Logger) error {
	var list v1.VirtualMachineInstanceList
	if err := vmis.List(ctx, &list); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	owned, err := l.List(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		// Not fatal: the launcher's Watch reports every owned VMI too.
		log.Warn("nodeagent: listing the launcher's domains failed", "err", err)
	}
	orphans := 0
	for _, o := range owned {
		key := types.NamespacedName{Namespace: o.Namespace, Name: o.Name}
		err := vmis.Get(ctx, key, &v1.VirtualMachineInstance{})
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		orphans++
		view.set(key, o.UID, o.Status)
		select {
		case out <- eventFor(key):
		case <-ctx.Done():
			return nil
		}
	}
	log.Info("nodeagent: watching VMIs", "vmis", len(list.Items), "domains", len(owned), "orphans", orphans)
	return nil
}
