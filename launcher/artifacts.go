package launcher

import (
	"context"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// prepareArtifacts creates, in the VMI's state folder, every host file its
// domain refers to under layout. Not written yet.
func prepareArtifacts(ctx context.Context, vmi *v1.VirtualMachineInstance, layout convert.HostLayout, sources ConfigSources) error {
	return nil
}

// removeArtifacts removes the VMI's state folder and everything in it.
// Not written yet.
func removeArtifacts(vmi *v1.VirtualMachineInstance, layout convert.HostLayout) error {
	return nil
}

// ConfigSources names the local folders that back configMap, secret,
// serviceAccount and downwardAPI volumes: each key is the configMap or secret
// name, each value a folder whose files become the volume's files.
type ConfigSources struct {
	ConfigMaps map[string]string
	Secrets    map[string]string
	// ServiceAccounts maps a service account name to its token folder.
	ServiceAccounts map[string]string
}
