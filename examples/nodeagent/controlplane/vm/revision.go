package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Revisions: each start of a VM records the VM's spec in a
// ControllerRevision, as KubeVirt's VM controller does, named
// revision-start-vm-<VM UID>-<generation>, owned by the VM, holding
// {"spec": <the VM's spec>}; the VMI names it in
// status.virtualMachineRevisionName. It tells later which template the
// running VMI was made from: whether a new generation of the VM changed
// the template (RestartRequired) or only, say, its run strategy (the VMI
// then takes the new generation).

// revisionPrefix is the name prefix of vm's revisions.
func revisionPrefix(uid types.UID) string { return "revision-start-vm-" + string(uid) + "-" }

// revisionName is the name of vm's revision of generation.
func revisionName(uid types.UID, generation int64) string {
	return fmt.Sprintf("%s%d", revisionPrefix(uid), generation)
}

// revisionData is what a revision holds (KubeVirt's
// VirtualMachineRevisionData).
type revisionData struct {
	Spec v1.VirtualMachineSpec `json:"spec"`
}

// revisions reads and writes a VM's ControllerRevisions.
type revisions struct {
	reader client.Reader
	writer client.Writer
}

// list returns vm's revisions.
func (r revisions) list(ctx context.Context, vm *v1.VirtualMachine) ([]appsv1.ControllerRevision, error) {
	var all appsv1.ControllerRevisionList
	if err := r.reader.List(ctx, &all, client.InNamespace(vm.Namespace)); err != nil {
		return nil, err
	}
	var out []appsv1.ControllerRevision
	for _, cr := range all.Items {
		if strings.HasPrefix(cr.Name, revisionPrefix(vm.UID)) {
			out = append(out, cr)
		}
	}
	return out, nil
}

// create records vm's spec as the revision of its generation, deleting its
// older ones, and returns its name. It is idempotent.
func (r revisions) create(ctx context.Context, vm *v1.VirtualMachine) (string, error) {
	name := revisionName(vm.UID, vm.Generation)
	have, err := r.list(ctx, vm)
	if err != nil {
		return "", err
	}
	exists := false
	for i := range have {
		if have[i].Revision == vm.Generation {
			exists = true
			continue
		}
		if err := r.writer.Delete(ctx, &have[i]); client.IgnoreNotFound(err) != nil {
			return "", err
		}
	}
	if exists {
		return name, nil
	}
	data, err := json.Marshal(revisionData{Spec: vm.Spec})
	if err != nil {
		return "", err
	}
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       vm.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(vm, v1.VirtualMachineGroupVersionKind)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: vm.Generation,
	}
	if err := r.writer.Create(ctx, cr); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	return name, nil
}

// get returns the spec recorded in the revision called name (nil: there is
// none).
func (r revisions) get(ctx context.Context, namespace, name string) (*v1.VirtualMachineSpec, error) {
	if name == "" {
		return nil, nil
	}
	var cr appsv1.ControllerRevision
	err := r.reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &cr)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeRevision(&cr)
}

// latest returns the spec of vm's revision of the highest generation (nil:
// it has none), as KubeVirt's getLastVMRevisionSpec.
func (r revisions) latest(ctx context.Context, vm *v1.VirtualMachine) (*v1.VirtualMachineSpec, error) {
	have, err := r.list(ctx, vm)
	if err != nil || len(have) == 0 {
		return nil, err
	}
	best := &have[0]
	for i := range have {
		if have[i].Revision > best.Revision {
			best = &have[i]
		}
	}
	return decodeRevision(best)
}

// deleteAll deletes vm's revisions: the VM is going (no garbage collector
// here deletes what it owns).
func (r revisions) deleteAll(ctx context.Context, vm *v1.VirtualMachine) error {
	have, err := r.list(ctx, vm)
	if err != nil {
		return err
	}
	for i := range have {
		if err := r.writer.Delete(ctx, &have[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

func decodeRevision(cr *appsv1.ControllerRevision) (*v1.VirtualMachineSpec, error) {
	var d revisionData
	if err := json.Unmarshal(cr.Data.Raw, &d); err != nil {
		return nil, fmt.Errorf("revision %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	return &d.Spec, nil
}
