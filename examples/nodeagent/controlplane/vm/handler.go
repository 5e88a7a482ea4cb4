package vm

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// vmiHandler turns the cache's VMI events into the VMs to reconcile, and
// records what they show of the controller's expectations, as KubeVirt's
// add/update/deleteVirtualMachineInstance: a VMI's creation observed, a
// VMI being deleted (or gone) observed. A VMI controlled by a VM goes to
// that VM; one controlled by nobody to the VM of its name, which may adopt
// it; one controlled by something else nowhere.
func vmiHandler(expect *expectations) handler.TypedEventHandler[*v1.VirtualMachineInstance, reconcile.Request] {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.TypedFuncs[*v1.VirtualMachineInstance, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[*v1.VirtualMachineInstance], q queue) {
			vmi := e.Object
			key, owned, ok := vmOf(vmi)
			if !ok {
				return
			}
			switch {
			case owned && vmi.DeletionTimestamp != nil:
				// Seen first while deleting (a controller that restarted):
				// a deletion, not a creation.
				expect.deletionObserved(key, vmi.UID)
			case owned:
				expect.creationObserved(key)
			}
			q.Add(reconcile.Request{NamespacedName: key})
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*v1.VirtualMachineInstance], q queue) {
			if e.ObjectNew.ResourceVersion == e.ObjectOld.ResourceVersion {
				return // a resync: nothing changed
			}
			if old, _, ok := vmOf(e.ObjectOld); ok {
				q.Add(reconcile.Request{NamespacedName: old})
			}
			key, owned, ok := vmOf(e.ObjectNew)
			if !ok {
				return
			}
			if owned && e.ObjectNew.DeletionTimestamp != nil {
				expect.deletionObserved(key, e.ObjectNew.UID)
			}
			q.Add(reconcile.Request{NamespacedName: key})
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*v1.VirtualMachineInstance], q queue) {
			key, owned, ok := vmOf(e.Object)
			if !ok {
				return
			}
			if owned {
				expect.deletionObserved(key, e.Object.UID)
			}
			q.Add(reconcile.Request{NamespacedName: key})
		},
	}
}

// vmOf returns the VM a VMI belongs to: its controlling VM (owned), or,
// without a controller, the VM of its name (!owned); ok is false for a VMI
// another kind of object controls.
func vmOf(vmi *v1.VirtualMachineInstance) (key types.NamespacedName, owned, ok bool) {
	ref := metav1.GetControllerOf(vmi)
	switch {
	case ref == nil:
		return types.NamespacedName{Namespace: vmi.Namespace, Name: vmi.Name}, false, true
	case ref.Kind == v1.VirtualMachineGroupVersionKind.Kind && groupOf(ref.APIVersion) == v1.VirtualMachineGroupVersionKind.Group:
		return types.NamespacedName{Namespace: vmi.Namespace, Name: ref.Name}, true, true
	}
	return types.NamespacedName{}, false, false
}

// groupOf is the group of an API version ("kubevirt.io/v1": "kubevirt.io").
func groupOf(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return ""
	}
	return gv.Group
}
