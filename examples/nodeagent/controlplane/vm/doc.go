// Package vm is the control plane's VirtualMachine controller: KubeVirt's
// virt-controller VM controller (pkg/virt-controller/watch/vm/vm.go of
// KubeVirt v1.8.0) for what a VM is here — no DataVolumes, instance types,
// hotplug, migrations or memory dumps.
//
// Add adds it to a controller-runtime manager. For each VM it:
//
//   - records the API version it works with (annotations
//     kubevirt.io/latest-observed-api-version and
//     kubevirt.io/storage-observed-api-version) and holds KubeVirt's
//     finalizer (kubevirt.io/virtualMachineControllerFinalize), so that a
//     deleted VM's VMI is stopped, and its revisions deleted, before it
//     goes;
//   - keeps its VMI as its run strategy says (decide: Always,
//     RerunOnFailure, Once, Manual, Halted, spec.running) and its state
//     change requests ask (a start; a stop naming the VMI's UID; a restart
//     is a stop and a start), starting after a start failure only once
//     KubeVirt's backoff is over;
//   - makes the VMI from the template (newVMI: the library's api.Decode
//     of the VM, as pipeline.FromDocument reads one, with the VM as
//     controlling owner, KubeVirt's finalizer, the VM's generation and the
//     revision of the VM's spec it was made from), and adopts a VMI of its
//     name that nobody owns;
//   - stops a VMI by deleting it with its UID as the precondition, and
//     starts the next one only once it is gone (a VM's VMIs share its
//     name);
//   - writes the VM's status through the status subresource: created,
//     ready, printableStatus (Stopped, Starting, Running, Paused, Stopping,
//     Terminating, CrashLoopBackOff, ErrorUnschedulable...), the conditions
//     (Ready, Failure, RestartRequired, and the VMI's others copied),
//     observedGeneration and desiredGeneration, the recorded run strategy,
//     the start failure record and the state change requests left to do —
//     and lets an ended VMI go once its end is recorded (its finalizer).
//
// Events on the VM say what it did (SuccessfulCreate, SuccessfulDelete,
// FailedCreate, FailedDelete), from component virtualmachine-controller,
// KubeVirt's words.
package vm
