// Package api reads KubeVirt VirtualMachineInstances and gives them the
// meaning they have in a cluster: Decode parses YAML or JSON (a VMI, or a
// VirtualMachine's template), Default applies KubeVirt's admission defaults,
// and Validate applies KubeVirt's admission rules that make sense without a
// cluster. The types are kubevirt.io/api/core/v1's own.
//
// Validate is the one source of the rules of a VMI alone: KubeVirt's, and
// this library's own where KubeVirt passes on what libvirt or QEMU then
// refuse, or drops a field without a word (each rule family's doc says
// which). The words a field may take are read from one table per
// vocabulary (internal/vocab), the one the converter maps them with; the
// converter checks none of these rules again and refuses only what depends
// on the host.
//
// The three run in this order, as in KubeVirt's API server:
//
//	vmi, err := api.Decode(data)          // *InvalidError: document or field errors
//	api.Default(vmi, api.ClusterConfig{}) // zero value = KubeVirt's default cluster
//	errs := api.Validate(vmi)             // field.ErrorList, empty when valid
//
// Every error names the path of the offending field as the user wrote it
// (spec.domain.devices.disks[0].bus), so that callers can print, count or
// match them. The package is pure: it does not touch the file system, the
// environment, the clock or randomness, and the same input always gives
// the same output (a VMI without firmware.uuid gets FirmwareUUID of its
// namespace and name, not KubeVirt's random one).
//
// Decode is strict in one pass over the JSON and one typed decode: YAML is
// turned into JSON (by a fast reader of plain block YAML, decode_fastyaml.go,
// or by the YAML library for anything else, with the same JSON either way),
// a scanner checks every key against the Go types without building a tree
// (decode_scan.go), and sigs.k8s.io/json decodes. Only when that fails is
// the document walked again, to name every bad value's path
// (decode_locate.go). The *InvalidError it returns lists every problem
// found and unwraps to each *field.Error.
//
// InvalidError is the one error shape of the whole pure pipeline: decode,
// validation (pipeline wraps Validate's list in it), the converter and the
// launcher return it for input they refuse. DecodeDocument keeps the kind
// of the document in a Document, whose Path and FieldErrors show a
// problem of the VMI at its place in a VirtualMachine.
package api
