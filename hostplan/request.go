package hostplan

import (
	"errors"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// Request is a VMI admitted for a plan on a host, with what the launcher
// must gather before Make can plan it: the images the VMI names and the
// config sources its volumes read. Prepare makes it.
type Request struct {
	// VMI is the defaulted, validated VMI (a copy: the caller's is not
	// modified).
	VMI *v1.VirtualMachineInstance
	// Images are the containerDisk and kernel-boot images to resolve, in
	// the order the VMI names them.
	Images []ImageRequest
	// Sources are the configMaps, secrets and service accounts whose
	// files the VMI's volumes (and its cloud-init's secretRefs and
	// accessCredentials) read, each once.
	Sources []SourceRequest
}

// ImageRequest is one image a VMI names.
type ImageRequest struct {
	// Field is the path of the image field
	// (spec.volumes[0].containerDisk.image), the key of Inputs.Images.
	Field *field.Path
	// Volume is a containerDisk's volume name; empty for kernel boot.
	Volume     string
	Reference  string
	PullPolicy k8sv1.PullPolicy
	// PullSecret is the imagePullSecret, at SecretField.
	PullSecret  string
	SecretField *field.Path
	// DiskPath is a containerDisk's path inside the image; empty for
	// KubeVirt's one file under /disk/ (the resolver finds it).
	DiskPath string
	// KernelBoot is set for the kernel-boot container's image.
	KernelBoot bool
}

// SourceKind is the kind of a config source.
type SourceKind string

// The kinds of config sources.
const (
	ConfigMap      SourceKind = "configMap"
	Secret         SourceKind = "secret"
	ServiceAccount SourceKind = "serviceAccount"
)

// Source names one config source: a configMap, a secret or a service
// account's token, whose files the launcher reads from a local folder.
type Source struct {
	Kind SourceKind
	Name string
}

// SourceRequest is a config source a VMI reads, and the first field that
// names it (for errors).
type SourceRequest struct {
	Source
	Field *field.Path
}

// Prepare admits vmi for a plan on host — KubeVirt's defaults on a copy,
// then validation (pipeline.Admit) — and lists what must be gathered for
// it. A VMI refused here is an *InvalidError (pipeline.ErrInvalid) listing
// every field error.
func Prepare(vmi *v1.VirtualMachineInstance, host Host) (*Request, error) {
	if vmi == nil {
		return nil, errors.New("hostplan: Prepare of a nil VMI")
	}
	v, err := admit(vmi, pipeline.Config{Cluster: host.Cluster, Options: host.Options})
	if err != nil {
		return nil, err
	}
	return &Request{VMI: v, Images: imageRequests(v), Sources: sourceRequests(v)}, nil
}

// admit is pipeline.Admit, a variable so that a test can count it.
var admit = pipeline.Admit

// imageRequests lists the images v names: each containerDisk volume's and
// the kernel-boot container's.
func imageRequests(v *v1.VirtualMachineInstance) []ImageRequest {
	var out []ImageRequest
	for i, vol := range v.Spec.Volumes {
		cd := vol.ContainerDisk
		if cd == nil {
			continue
		}
		fp := volumesPath.Index(i).Child("containerDisk")
		out = append(out, ImageRequest{Field: fp.Child("image"), Volume: vol.Name, Reference: cd.Image, PullPolicy: cd.ImagePullPolicy,
			PullSecret: cd.ImagePullSecret, SecretField: fp.Child("imagePullSecret"), DiskPath: cd.Path})
	}
	if c := kernelBootContainer(v); c != nil {
		fp := kernelBootContainerPath
		out = append(out, ImageRequest{Field: fp.Child("image"), Reference: c.Image, PullPolicy: c.ImagePullPolicy,
			PullSecret: c.ImagePullSecret, SecretField: fp.Child("imagePullSecret"), KernelBoot: true})
	}
	return out
}

// sourceRequests lists the config sources v reads, each once: its
// configMap, secret and serviceAccount volumes, its cloud-init volumes'
// secretRefs, and the secrets of the SSH keys its cloud-init propagates.
func sourceRequests(v *v1.VirtualMachineInstance) []SourceRequest {
	var out []SourceRequest
	seen := map[Source]bool{}
	add := func(kind SourceKind, name string, fp *field.Path) {
		s := Source{kind, name}
		if name == "" || seen[s] {
			return
		}
		seen[s] = true
		out = append(out, SourceRequest{Source: s, Field: fp})
	}
	noCloud, configDrive := false, false
	for i, vol := range v.Spec.Volumes {
		vp := volumesPath.Index(i)
		switch {
		case vol.ConfigMap != nil:
			add(ConfigMap, vol.ConfigMap.Name, vp.Child("configMap", "name"))
		case vol.Secret != nil:
			add(Secret, vol.Secret.SecretName, vp.Child("secret", "secretName"))
		case vol.ServiceAccount != nil:
			add(ServiceAccount, vol.ServiceAccount.ServiceAccountName, vp.Child("serviceAccount", "serviceAccountName"))
		case vol.CloudInitNoCloud != nil:
			noCloud = true
			s, fp := vol.CloudInitNoCloud, vp.Child("cloudInitNoCloud")
			if s.UserDataSecretRef != nil {
				add(Secret, s.UserDataSecretRef.Name, fp.Child("secretRef", "name"))
			}
			if s.NetworkDataSecretRef != nil {
				add(Secret, s.NetworkDataSecretRef.Name, fp.Child("networkDataSecretRef", "name"))
			}
		case vol.CloudInitConfigDrive != nil:
			configDrive = true
			s, fp := vol.CloudInitConfigDrive, vp.Child("cloudInitConfigDrive")
			if s.UserDataSecretRef != nil {
				add(Secret, s.UserDataSecretRef.Name, fp.Child("secretRef", "name"))
			}
			if s.NetworkDataSecretRef != nil {
				add(Secret, s.NetworkDataSecretRef.Name, fp.Child("networkDataSecretRef", "name"))
			}
		}
	}
	for i, ac := range v.Spec.AccessCredentials {
		if name, ok := propagatedKeySecret(ac, noCloud, configDrive); ok {
			add(Secret, name, accessCredentialSecretPath(i))
		}
	}
	return out
}

// propagatedKeySecret returns the secret of an SSH key credential that a
// cloud-init volume of the VMI propagates (noCloud, configDrive: which
// kinds of cloud-init volume the VMI has).
func propagatedKeySecret(ac v1.AccessCredential, noCloud, configDrive bool) (string, bool) {
	ssh := ac.SSHPublicKey
	if ssh == nil || ssh.Source.Secret == nil || ssh.Source.Secret.SecretName == "" {
		return "", false
	}
	m := ssh.PropagationMethod
	if (noCloud && m.NoCloud != nil) || (configDrive && m.ConfigDrive != nil) {
		return ssh.Source.Secret.SecretName, true
	}
	return "", false
}

// accessCredentialSecretPath is the field of spec.accessCredentials[i]'s
// SSH key secret.
func accessCredentialSecretPath(i int) *field.Path {
	return field.NewPath("spec", "accessCredentials").Index(i).Child("sshPublicKey", "source", "secret", "secretName")
}

// kernelBootContainer returns the VMI's kernel-boot container, or nil.
func kernelBootContainer(v *v1.VirtualMachineInstance) *v1.KernelBootContainer {
	if fw := v.Spec.Domain.Firmware; fw != nil && fw.KernelBoot != nil {
		return fw.KernelBoot.Container
	}
	return nil
}

// The field paths the plan names in its errors.
var (
	volumesPath             = field.NewPath("spec", "volumes")
	kernelBootContainerPath = field.NewPath("spec", "domain", "firmware", "kernelBoot", "container")
)
