package vm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	v1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// DefaultWorkers is virt-controller's number of VM workers.
const DefaultWorkers = 3

// EventSource is the component of the Events the controller records on
// VMs, as KubeVirt's VM controller's.
const EventSource = "virtualmachine-controller"

// Reasons of the controller's Events and of the VM's Failure condition,
// KubeVirt's.
const (
	reasonSuccessfulCreate = "SuccessfulCreate"
	reasonFailedCreate     = "FailedCreate"
	reasonSuccessfulDelete = "SuccessfulDelete"
	reasonFailedDelete     = "FailedDelete"
)

// KubeVirt's words for a failed reconcile, which start the message of the
// VM's Failure condition (syncError.what).
const (
	fetchingRunStrategyFailure = "Error fetching RunStrategy"
	startingVMIFailure         = "Failure while starting VMI"
	deletingVMIFailure         = "Failure attempting to delete VMI"
	startRequestFailure        = "failed to patch VM with start action"
)

// Retry backoff of a VM whose reconcile failed.
const (
	retryMin = 200 * time.Millisecond
	retryMax = 30 * time.Second
)

// Options configure the VM controller.
type Options struct {
	// Workers is how many VMs are reconciled at once; 0: DefaultWorkers.
	Workers int
	// Logger receives the controller's log; nil is silent.
	Logger *slog.Logger
}

// Add adds the VM controller to mgr: it watches VirtualMachines, and the
// VMIs they own (or that have a VM's name and no owner: the VM adopts
// them), and keeps each VM's VMI as its run strategy says.
func Add(mgr manager.Manager, opts Options) error {
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	expect := newExpectations(time.Now)
	r := &reconciler{
		client:    mgr.GetClient(),
		revisions: revisions{reader: mgr.GetClient(), writer: mgr.GetClient()},
		events:    mgr.GetEventRecorderFor(EventSource),
		expect:    expect,
		log:       opts.Logger,
		now:       time.Now,
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("virtualmachine").
		For(&v1.VirtualMachine{}).
		WatchesRawSource(source.Kind(mgr.GetCache(), &v1.VirtualMachineInstance{}, vmiHandler(expect))).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: opts.Workers,
			RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](retryMin, retryMax),
			SkipNameValidation:      ptr.To(true),
		}).
		Complete(r)
}

// reconciler is the VM controller: KubeVirt's virt-controller VM
// controller (pkg/virt-controller/watch/vm/vm.go) for what a VM is here
// (no DataVolumes, instance types, hotplug or migrations).
type reconciler struct {
	client    client.Client
	revisions revisions
	events    record.EventRecorder
	expect    *expectations
	log       *slog.Logger
	now       func() time.Time
}

// Reconcile brings one VM's VMI to what its run strategy and state change
// requests ask for, and writes the VM's status.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var cached v1.VirtualMachine
	if err := r.client.Get(ctx, req.NamespacedName, &cached); err != nil {
		if apierrors.IsNotFound(err) {
			r.expect.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	vm := cached.DeepCopy()
	log := r.log.With("vm", req.String())

	// First, as KubeVirt: record the API version the controller works
	// with, so that the VM is stored in it.
	if vm.Annotations[v1.ControllerAPILatestVersionObservedAnnotation] != v1.ApiLatestVersion ||
		vm.Annotations[v1.ControllerAPIStorageVersionObservedAnnotation] != v1.ApiStorageVersion {
		metav1.SetMetaDataAnnotation(&vm.ObjectMeta, v1.ControllerAPILatestVersionObservedAnnotation, v1.ApiLatestVersion)
		metav1.SetMetaDataAnnotation(&vm.ObjectMeta, v1.ControllerAPIStorageVersionObservedAnnotation, v1.ApiStorageVersion)
		return ignoreConflict(r.client.Update(ctx, vm))
	}

	vmi, err := r.vmiOf(ctx, vm)
	if err != nil {
		return ignoreConflict(err)
	}
	// Until the cache has seen the controller's own last creation or
	// deletion, it is older than the API server: acting on it could start
	// a second VMI or delete the new one. The event that brings it brings
	// the VM back.
	if !r.expect.satisfied(req.NamespacedName) {
		return reconcile.Result{RequeueAfter: expectationsTTL}, nil
	}

	if vm.DeletionTimestamp != nil && vmi == nil {
		// Deleted, and its VMI is gone: its revisions go (no garbage
		// collector deletes what it owns here), then its finalizer, and
		// the API server deletes it.
		if err := r.revisions.deleteAll(ctx, vm); err != nil {
			return reconcile.Result{}, err
		}
		return ignoreConflict(r.setFinalizer(ctx, vm, false))
	}

	orig := vm.Status.DeepCopy()
	result, syncErr, err := r.sync(ctx, vm, vmi, log)
	if err != nil {
		return ignoreConflict(err)
	}
	if syncErr != nil {
		log.Warn("controlplane: reconciling the VirtualMachine failed", "reason", syncErr.reason, "err", syncErr.err)
	}
	if err := r.writeStatus(ctx, vm, orig, vmi, syncErr); err != nil {
		return ignoreConflict(err)
	}
	if syncErr != nil {
		return reconcile.Result{}, syncErr
	}
	return result, nil
}

// vmiOf returns the VM's VMI from the cache: the VMI of its name that it
// controls, or one of its name that nobody controls, which it adopts (as
// KubeVirt's ClaimVirtualMachineInstanceByName; not while the VM is
// deleting). A VMI of its name that another controls is not its (nil).
func (r *reconciler) vmiOf(ctx context.Context, vm *v1.VirtualMachine) (*v1.VirtualMachineInstance, error) {
	var vmi v1.VirtualMachineInstance
	err := r.client.Get(ctx, client.ObjectKeyFromObject(vm), &vmi)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ref := metav1.GetControllerOf(&vmi)
	switch {
	case ref != nil && ref.UID == vm.UID:
		return vmi.DeepCopy(), nil
	case ref != nil, vm.DeletionTimestamp != nil, vmi.DeletionTimestamp != nil:
		return nil, nil
	}
	adopted := vmi.DeepCopy()
	adopted.OwnerReferences = append(adopted.OwnerReferences, *metav1.NewControllerRef(vm, v1.VirtualMachineGroupVersionKind))
	if err := r.client.Patch(ctx, adopted, client.MergeFromWithOptions(&vmi, client.MergeFromWithOptimisticLock{})); err != nil {
		return nil, err
	}
	r.log.Info("controlplane: adopted a VMI of the VM's name", "vm", client.ObjectKeyFromObject(vm).String(), "uid", vmi.UID)
	return adopted, nil
}

// sync acts on the VM and its VMI: the VM's deletion, its finalizer, its
// VMI's generation annotation, its run strategy, its template's
// hot-pluggable volumes and its RestartRequired condition. It returns the reconcile's result, a failure to report in the
// VM's Failure condition (syncErr), or an error to retry.
func (r *reconciler) sync(ctx context.Context, vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance, log *slog.Logger) (reconcile.Result, *syncError, error) {
	var lastSpec *v1.VirtualMachineSpec
	if vmi != nil {
		var err error
		if lastSpec, err = r.revisions.latest(ctx, vm); err != nil {
			return reconcile.Result{}, nil, err
		}
	}

	if vm.DeletionTimestamp != nil {
		// Deleting: the VMI stops first (Reconcile removes the finalizer
		// once it is gone).
		return reconcile.Result{}, r.stop(ctx, vm, vmi, log), nil
	}
	if err := r.setFinalizer(ctx, vm, true); err != nil {
		return reconcile.Result{}, nil, err
	}
	if err := r.bumpGeneration(ctx, vm, vmi); err != nil {
		return reconcile.Result{}, nil, err
	}

	strategy, err := vm.RunStrategy()
	if err != nil {
		return reconcile.Result{}, &syncError{fetchingRunStrategyFailure, err, reasonFailedCreate}, nil
	}
	d, err := decide(vm, vmi, strategy, r.now())
	if err != nil {
		return reconcile.Result{}, &syncError{"", err, reasonFailedCreate}, nil
	}
	if d.action != none {
		log.Info("controlplane: "+d.action.String(), "runStrategy", strategy, "vmiPhase", phase(vmi))
	}
	var syncErr *syncError
	switch d.action {
	case start:
		syncErr = r.start(ctx, vm, log)
	case stop:
		syncErr = r.stop(ctx, vm, vmi, log)
	case stopAndRequestStart:
		if err := r.requestStart(ctx, vm); err != nil {
			return reconcile.Result{}, &syncError{startRequestFailure, err, reasonFailedDelete}, nil
		}
		syncErr = r.stop(ctx, vm, vmi, log)
	case setAlways:
		changed := vm.DeepCopy()
		if changed.Spec.RunStrategy != nil {
			changed.Spec.RunStrategy = ptr.To(v1.RunStrategyAlways)
		} else {
			changed.Spec.Running = ptr.To(true)
		}
		if err := r.client.Update(ctx, changed); err != nil {
			return reconcile.Result{}, &syncError{startingVMIFailure, err, reasonFailedCreate}, nil
		}
		return reconcile.Result{}, nil, nil // its own event brings it back
	}
	if d.action == none {
		if err := r.syncHotplug(ctx, vm, vmi, log); err != nil {
			return reconcile.Result{}, nil, err
		}
	}
	syncRestartRequired(lastSpec, vm, vmi, r.now())
	return reconcile.Result{RequeueAfter: d.after}, syncErr, nil
}

// start creates the VM's VMI, as KubeVirt's startVMI: its revision first,
// the expectation of its creation, then the VMI, and an Event either way.
func (r *reconciler) start(ctx context.Context, vm *v1.VirtualMachine, log *slog.Logger) *syncError {
	failed := func(err error) *syncError {
		r.events.Eventf(vm, k8sv1.EventTypeWarning, reasonFailedCreate, "Error creating virtual machine instance: %v", err)
		return &syncError{startingVMIFailure, err, reasonFailedCreate}
	}
	removeCondition(vm, v1.VirtualMachineRestartRequired)
	revision, err := r.revisions.create(ctx, vm)
	if err != nil {
		return failed(err)
	}
	vmi, err := newVMI(vm, revision)
	if err != nil {
		return failed(err)
	}
	key := client.ObjectKeyFromObject(vm)
	r.expect.expectCreation(key)
	if err := r.client.Create(ctx, vmi); err != nil {
		r.expect.creationObserved(key)
		return failed(err)
	}
	log.Info("controlplane: started the VM by creating its VMI", "uid", vmi.UID)
	r.events.Eventf(vm, k8sv1.EventTypeNormal, reasonSuccessfulCreate, "Started the virtual machine by creating the new virtual machine instance %v", vmi.Name)
	return nil
}

// stop deletes the VM's VMI (unless it is being deleted already), with its
// UID as the precondition, so that it can only ever delete the VMI it
// decided about, never one that replaced it since.
func (r *reconciler) stop(ctx context.Context, vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance, log *slog.Logger) *syncError {
	if vmi.DeletionTimestamp != nil {
		return nil
	}
	key := client.ObjectKeyFromObject(vm)
	r.expect.expectDeletion(key, vmi.UID)
	err := r.client.Delete(ctx, vmi, client.Preconditions{UID: ptr.To(vmi.UID)})
	if err != nil {
		r.expect.deletionObserved(key, vmi.UID)
		if apierrors.IsNotFound(err) {
			return nil // gone: its event brings the VM back
		}
		r.events.Eventf(vm, k8sv1.EventTypeWarning, reasonFailedDelete, "Error deleting virtual machine instance %s: %v", vmi.Name, err)
		return &syncError{deletingVMIFailure, err, reasonFailedDelete}
	}
	removeCondition(vm, v1.VirtualMachineRestartRequired)
	log.Info("controlplane: stopped the VM by deleting its VMI", "uid", vmi.UID, "phase", vmi.Status.Phase)
	r.events.Eventf(vm, k8sv1.EventTypeNormal, reasonSuccessfulDelete, "Stopped the virtual machine by deleting the virtual machine instance %v", vmi.UID)
	return nil
}

// requestStart appends a start request to the VM's status, written at once
// (before the VMI it replaces is deleted, so that no crash between the two
// can lose it).
func (r *reconciler) requestStart(ctx context.Context, vm *v1.VirtualMachine) error {
	vm.Status.StateChangeRequests = append(vm.Status.StateChangeRequests, v1.VirtualMachineStateChangeRequest{Action: v1.StartRequest})
	return r.client.Status().Update(ctx, vm)
}

// setFinalizer adds (or removes) KubeVirt's VM controller finalizer on the
// VM, with a JSON patch that tests the finalizers it read, as KubeVirt's.
// While the VM has it, its deletion waits for its VMI to be gone.
func (r *reconciler) setFinalizer(ctx context.Context, vm *v1.VirtualMachine, on bool) error {
	has := slices.Contains(vm.Finalizers, v1.VirtualMachineControllerFinalizer)
	if has == on {
		return nil
	}
	want := slices.DeleteFunc(slices.Clone(vm.Finalizers), func(f string) bool { return f == v1.VirtualMachineControllerFinalizer })
	if on {
		want = append(want, v1.VirtualMachineControllerFinalizer)
	}
	return patchFinalizers(ctx, r.client, vm, want)
}

// patchFinalizers sets obj's finalizers to want with a JSON patch that
// tests they are still those obj has: concurrent writes of other fields
// (a node agent's status) do not conflict with it.
func patchFinalizers(ctx context.Context, c client.Writer, obj client.Object, want []string) error {
	p, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/finalizers", "value": obj.GetFinalizers()},
		{"op": "replace", "path": "/metadata/finalizers", "value": want},
	})
	if err != nil {
		return err
	}
	if len(obj.GetFinalizers()) == 0 {
		p, err = json.Marshal([]map[string]any{{"op": "add", "path": "/metadata/finalizers", "value": want}})
		if err != nil {
			return err
		}
	}
	return testedPatch(ctx, c, obj, p)
}

// errChanged is what a JSON patch whose test failed returns: the object
// changed since it was read.
var errChanged = errors.New("the object changed since it was read")

// testedPatch sends a JSON patch whose first operation tests what it
// read; a failed test (422 Invalid from the API server) is errChanged.
func testedPatch(ctx context.Context, c client.Writer, obj client.Object, patch []byte) error {
	err := c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
	if apierrors.IsInvalid(err) {
		return fmt.Errorf("%w: %w", errChanged, err)
	}
	return err
}

// bumpGeneration gives the VMI the VM's generation (annotation
// kubevirt.io/vm-generation) when the VM changed since the VMI was made
// but not its template (only the run strategy, say), as KubeVirt's
// conditionallyBumpGenerationAnnotationOnVmi: the VMI is then as the VM
// wants it.
func (r *reconciler) bumpGeneration(ctx context.Context, vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) error {
	if vmi == nil || vmi.Annotations[v1.VirtualMachineGenerationAnnotation] == strconv.FormatInt(vm.Generation, 10) {
		return nil
	}
	spec, err := r.revisions.get(ctx, vmi.Namespace, vmi.Status.VirtualMachineRevisionName)
	if err != nil || spec == nil {
		return err
	}
	if !equality.Semantic.DeepEqual(spec.Template, vm.Spec.Template) {
		return nil
	}
	return r.setGeneration(ctx, vmi, vm.Generation)
}

// setGeneration sets the VMI's kubevirt.io/vm-generation annotation, with
// a JSON patch that tests the annotations it read, as KubeVirt's.
func (r *reconciler) setGeneration(ctx context.Context, vmi *v1.VirtualMachineInstance, generation int64) error {
	want := map[string]string{}
	for k, v := range vmi.Annotations {
		want[k] = v
	}
	want[v1.VirtualMachineGenerationAnnotation] = strconv.FormatInt(generation, 10)
	ops := []map[string]any{{"op": "add", "path": "/metadata/annotations", "value": want}}
	if vmi.Annotations != nil {
		ops = []map[string]any{
			{"op": "test", "path": "/metadata/annotations", "value": vmi.Annotations},
			{"op": "replace", "path": "/metadata/annotations", "value": want},
		}
	}
	p, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	return testedPatch(ctx, r.client, vmi, p)
}

// writeStatus computes the VM's status (updateStatus) and writes it when it
// changed, through the status subresource, with the VM's resourceVersion
// as precondition; then it removes the VM controller's finalizer from a
// final VMI, whose end the status has recorded.
func (r *reconciler) writeStatus(ctx context.Context, vm *v1.VirtualMachine, orig *v1.VirtualMachineStatus, vmi *v1.VirtualMachineInstance, syncErr *syncError) error {
	if vmi != nil {
		if err := r.syncGenerations(ctx, vm, vmi); err != nil {
			return err
		}
	}
	creations, deletions := r.expect.pending(client.ObjectKeyFromObject(vm))
	updateStatus(vm, observed{vmi: vmi, startExpected: creations > 0, stopExpected: deletions > 0, syncErr: syncErr, now: r.now()})
	if !equality.Semantic.DeepEqual(&vm.Status, orig) {
		if err := r.client.Status().Update(ctx, vm); err != nil {
			return err
		}
	}
	if vmi != nil && vmi.IsFinal() && slices.Contains(vmi.Finalizers, v1.VirtualMachineControllerFinalizer) {
		want := slices.DeleteFunc(slices.Clone(vmi.Finalizers), func(f string) bool { return f == v1.VirtualMachineControllerFinalizer })
		return patchFinalizers(ctx, r.client, vmi, want)
	}
	return nil
}

// syncGenerations sets the VM's status.observedGeneration to the
// generation its VMI was made from (or took since: bumpGeneration) and
// desiredGeneration to the VM's, as KubeVirt's syncGenerationInfo. A VMI
// without the annotation gets the generation of its revision.
func (r *reconciler) syncGenerations(ctx context.Context, vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) error {
	gen, err := strconv.ParseInt(vmi.Annotations[v1.VirtualMachineGenerationAnnotation], 10, 64)
	if err != nil {
		var cr appsv1.ControllerRevision
		err := r.client.Get(ctx, types.NamespacedName{Namespace: vmi.Namespace, Name: vmi.Status.VirtualMachineRevisionName}, &cr)
		if vmi.Status.VirtualMachineRevisionName == "" || apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		gen = cr.Revision
		if err := r.setGeneration(ctx, vmi, gen); err != nil {
			return err
		}
	}
	vm.Status.ObservedGeneration = gen
	vm.Status.DesiredGeneration = vm.Generation
	return nil
}

// phase is vmi's phase, "" without one, for the log.
func phase(vmi *v1.VirtualMachineInstance) v1.VirtualMachineInstancePhase {
	if vmi == nil {
		return ""
	}
	return vmi.Status.Phase
}

// ignoreConflict ends a reconcile whose write found the object changed
// (409) or gone without an error: the change's own event brings the VM
// back, read afresh. (A conflict is the normal outcome of writing from a
// cache that lags behind.)
func ignoreConflict(err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) || errors.Is(err, errChanged) {
		return reconcile.Result{RequeueAfter: retryMin}, nil
	}
	return reconcile.Result{}, err
}
