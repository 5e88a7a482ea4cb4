package api

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/vocab"
)

// maxAnnotationsBytes is Kubernetes' limit on the total size of an object's
// annotations.
const maxAnnotationsBytes = 256 * 1024

// restrictedLabels are labels KubeVirt sets itself and refuses on a VMI
// that a user creates.
var restrictedLabels = []string{
	v1.CreatedByLabel,
	v1.MigrationJobLabel,
	v1.NodeNameLabel,
	v1.MigrationTargetNodeNameLabel,
	v1.NodeSchedulable,
	v1.InstallStrategyLabel,
}

// The paths of the metadata fields every VMI is checked on.
var (
	namePath      = metadataPath.Child("name")
	namespacePath = metadataPath.Child("namespace")
	labelsPath    = metadataPath.Child("labels")
	annPath       = metadataPath.Child("annotations")
	hostnamePath  = specPath.Child("hostname")
	subdomainPath = specPath.Child("subdomain")
)

// sortedLabelKeys returns the keys of m in order, in buf when they fit.
func sortedLabelKeys(m map[string]string, buf []string) []string {
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// validateMetadata checks names as Kubernetes and KubeVirt do: a name that
// is a DNS-1123 subdomain, a namespace that is a DNS-1123 label, label and
// annotation syntax and size, a hostname that is a DNS-1123 label and a
// subdomain that is a DNS-1123 subdomain.
func validateMetadata(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	if vmi.Name == "" {
		errs = append(errs, field.Required(namePath, "a VirtualMachineInstance needs a name"))
	} else {
		errs = appendMsgs(errs, namePath, vmi.Name, dns1123Subdomain(vmi.Name))
	}
	if vmi.Namespace != "" {
		errs = appendMsgs(errs, namespacePath, vmi.Namespace, dns1123Label(vmi.Namespace))
	}
	var buf [8]string
	for _, k := range sortedLabelKeys(vmi.Labels, buf[:0]) {
		// As Kubernetes does, a key that is not a name is reported at the
		// labels themselves, with the key as the value: such a key (with a
		// "]", a newline…) cannot be part of a path.
		keyMsgs := qualifiedName(k)
		errs = appendMsgs(errs, labelsPath, k, keyMsgs)
		if msgs := labelValue(vmi.Labels[k]); len(msgs) > 0 {
			p := labelsPath
			if len(keyMsgs) == 0 {
				p = labelsPath.Key(k)
			}
			errs = appendMsgs(errs, p, vmi.Labels[k], msgs)
		}
	}
	total := 0
	for _, k := range sortedLabelKeys(vmi.Annotations, buf[:0]) {
		errs = appendMsgs(errs, annPath, k, qualifiedName(strings.ToLower(k)))
		total += len(k) + len(vmi.Annotations[k])
	}
	if total > maxAnnotationsBytes {
		errs = append(errs, field.TooLong(annPath, "", maxAnnotationsBytes))
	}
	if h := vmi.Spec.Hostname; h != "" {
		errs = appendMsgs(errs, hostnamePath, h, dns1123Label(h))
	}
	if s := vmi.Spec.Subdomain; s != "" {
		errs = appendMsgs(errs, subdomainPath, s, dns1123Subdomain(s))
	}
	return errs
}

// validateReservedLabels refuses the labels KubeVirt reserves for itself,
// as its VMI create admitter does: KubeVirt sets them on the VMIs it
// admitted (kubevirt.io/nodeName once the VMI is scheduled), so only a VMI
// being created is refused for them.
func validateReservedLabels(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	labelsPath := metadataPath.Child("labels")
	for _, k := range slices.Sorted(maps.Keys(vmi.Labels)) {
		if slices.Contains(restrictedLabels, k) {
			errs = append(errs, field.Forbidden(labelsPath.Key(k), "label reserved for KubeVirt: a VirtualMachineInstance may not be created with it"))
		}
	}
	return errs
}

// validatePlatform checks what KubeVirt checks of the platform: the
// architecture (here only amd64, the one Default and convert are for) and
// a machine type among KubeVirt's amd64 machines (q35*, pc-q35*).
func validatePlatform(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	spec := &vmi.Spec
	if spec.Architecture != "" && spec.Architecture != DefaultArchitecture {
		errs = append(errs, field.NotSupported(specPath.Child("architecture"), spec.Architecture, []string{DefaultArchitecture}))
	}
	if m := spec.Domain.Machine; m != nil && m.Type != "" {
		ok := false
		for _, p := range vocab.MachineTypes {
			if match, _ := filepath.Match(p, m.Type); match {
				ok = true
				break
			}
		}
		if !ok {
			errs = append(errs, field.NotSupported(domainPath.Child("machine", "type"), m.Type, vocab.MachineTypes))
		}
	}
	return errs
}

// appendMsgs adds one Invalid error per message of a Kubernetes syntax
// check.
func appendMsgs(errs field.ErrorList, p *field.Path, value string, msgs []string) field.ErrorList {
	for _, m := range msgs {
		errs = append(errs, field.Invalid(p, value, m))
	}
	return errs
}
