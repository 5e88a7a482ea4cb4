// Package admission is the control plane's admission webhooks for
// VirtualMachines and VirtualMachineInstances: KubeVirt's virt-api
// mutating and validating webhooks, built on the library's api package,
// so that `kubectl apply` of a misconfigured VM or VMI is refused at once,
// each problem with its field path, and nothing is created.
//
//	mux := http.NewServeMux()
//	admission.Register(mux, admission.Options{}) // serve mux over TLS
//	m, v := admission.Configurations("https://127.0.0.1:8443", caPEM)
//
// The webhooks (Configurations, at KubeVirt's paths, failurePolicy Fail):
//
//   - VMI mutator, on creation: api.Default (KubeVirt's admission
//     defaults), KubeVirt's finalizer
//     kubevirt.io/foregroundDeleteVirtualMachine, phase Pending;
//   - VMI create validator: api.ValidateCreate;
//   - VMI update validator: a change of metadata or status goes through
//     untouched (node agents write status, finalizers and the node binding
//     through the object, as KubeVirt's VMI CRD has no status
//     subresource); a change of the spec is refused ("update of VMI object
//     is restricted") unless one of Options.KubeVirtUsers makes it — the
//     control plane, whose VM controller and subresource API hot-plug
//     volumes, as KubeVirt lets only its service accounts — and then goes
//     to Options.LiveUpdate: by default HotplugUpdate, KubeVirt's hotplug
//     admission (permanent volumes stay, hot-plugged claims on SCSI or
//     virtio, maxSockets and maxGuest stay);
//   - VM mutator, on creation and on changes of the spec: the template's
//     architecture and machine type, from api.Default;
//   - VM validator, on creation and on changes of the spec: the run
//     strategy and the template, as the VMI it makes (api.Decode,
//     api.Default, api.ValidateCreate), each problem at its place in the VM
//     (spec.template.spec.…, api.Document.FieldErrors).
//
// A refusal is KubeVirt's: 422 Invalid, one cause per problem (its path
// and what is wrong), at most 10.
package admission
