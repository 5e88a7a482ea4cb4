package api

import v1 "kubevirt.io/api/core/v1"

// ClusterConfig holds the cluster-level choices that shape defaults. The
// zero value is KubeVirt's default configuration.
type ClusterConfig struct{}

// Default applies KubeVirt's admission defaults for amd64 to vmi, in place.
// Not written yet.
func Default(vmi *v1.VirtualMachineInstance, cfg ClusterConfig) {}
