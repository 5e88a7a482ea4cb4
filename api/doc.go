// Package api reads KubeVirt VirtualMachineInstances and gives them the
// meaning they have in a cluster: Decode parses YAML or JSON (a VMI, or a
// VirtualMachine's template), Default applies KubeVirt's admission defaults,
// and Validate applies KubeVirt's admission rules that make sense without a
// cluster. The types are kubevirt.io/api/core/v1's own.
package api
