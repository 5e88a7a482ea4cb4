package hostplan

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/iso"
)

// Volume labels of the cloud-init ISOs, as cloud-init looks for them.
const (
	noCloudLabel     = "cidata"
	configDriveLabel = "config-2"
)

// hiddenValue stands in for user data in field errors: user data can hold
// secrets and never appears in errors or logs.
const hiddenValue = "(not shown)"

// noCloudMetadata is NoCloud's meta-data, as KubeVirt writes it (JSON,
// which cloud-init reads as YAML).
type noCloudMetadata struct {
	InstanceType  string            `json:"instance-type,omitempty"`
	InstanceID    string            `json:"instance-id"`
	LocalHostname string            `json:"local-hostname,omitempty"`
	PublicSSHKeys map[string]string `json:"public-keys,omitempty"`
}

// configDriveMetadata is ConfigDrive's openstack/latest/meta_data.json.
type configDriveMetadata struct {
	InstanceType  string            `json:"instance_type,omitempty"`
	InstanceID    string            `json:"instance_id"`
	Hostname      string            `json:"hostname,omitempty"`
	UUID          string            `json:"uuid,omitempty"`
	PublicSSHKeys map[string]string `json:"public_keys,omitempty"`
}

// cloudInitISO returns the NoCloud or ConfigDrive ISO of spec.volumes[index].
func cloudInitISO(vmi *v1.VirtualMachineInstance, index int, sources map[Source][]File) ([]byte, error) {
	files, label, err := cloudInitFiles(vmi, index, sources)
	if err != nil {
		return nil, err
	}
	img, err := iso.Build(label, files)
	if err != nil {
		return nil, fmt.Errorf("hostplan: volume %s: %w", vmi.Spec.Volumes[index].Name, err)
	}
	return img, nil
}

// cloudInitFiles returns the files and label of the ISO of
// spec.volumes[index], a cloudInitNoCloud or cloudInitConfigDrive volume.
func cloudInitFiles(vmi *v1.VirtualMachineInstance, index int, sources map[Source][]File) ([]iso.File, string, error) {
	vol := &vmi.Spec.Volumes[index]
	vp := volumesPath.Index(index)
	keys, err := accessCredentialKeys(vmi, sources, vol.CloudInitNoCloud != nil)
	if err != nil {
		return nil, "", err
	}
	instanceType := vmi.Annotations[v1.ClusterInstancetypeAnnotation]
	if instanceType == "" {
		instanceType = vmi.Annotations[v1.InstancetypeAnnotation]
	}
	hostname := cloudInitHostname(vmi)

	if s := vol.CloudInitNoCloud; s != nil {
		fp := vp.Child("cloudInitNoCloud")
		user, network, err := cloudInitData(fp, sources, s.UserData, s.UserDataBase64, s.UserDataSecretRef,
			s.NetworkData, s.NetworkDataBase64, s.NetworkDataSecretRef)
		if err != nil {
			return nil, "", err
		}
		meta, _ := json.Marshal(noCloudMetadata{
			InstanceType:  instanceType,
			InstanceID:    instanceID(vmi),
			LocalHostname: hostname,
			PublicSSHKeys: keys,
		})
		files := []iso.File{{Path: "user-data", Data: user}, {Path: "meta-data", Data: meta}}
		if len(network) > 0 {
			files = append(files, iso.File{Path: "network-config", Data: network})
		}
		return files, noCloudLabel, nil
	}

	s := vol.CloudInitConfigDrive
	if s == nil {
		return nil, "", field.Required(vp, "a cloud-init volume source")
	}
	fp := vp.Child("cloudInitConfigDrive")
	user, network, err := cloudInitData(fp, sources, s.UserData, s.UserDataBase64, s.UserDataSecretRef,
		s.NetworkData, s.NetworkDataBase64, s.NetworkDataSecretRef)
	if err != nil {
		return nil, "", err
	}
	meta, _ := json.Marshal(configDriveMetadata{
		InstanceType:  instanceType,
		InstanceID:    vmi.Name + "." + vmi.Namespace,
		Hostname:      hostname,
		UUID:          firmwareUUID(vmi),
		PublicSSHKeys: keys,
	})
	files := []iso.File{
		{Path: "openstack/latest/user_data", Data: user},
		{Path: "openstack/latest/meta_data.json", Data: meta},
	}
	if len(network) > 0 {
		files = append(files, iso.File{Path: "openstack/latest/network_data.json", Data: network})
	}
	return files, configDriveLabel, nil
}

// cloudInitData resolves user and network data: from a secret when a
// secretRef is set, else inline, else base64 (KubeVirt's precedence).
func cloudInitData(fp *field.Path, sources map[Source][]File,
	user, userB64 string, userRef *k8sv1.LocalObjectReference,
	network, networkB64 string, networkRef *k8sv1.LocalObjectReference,
) ([]byte, []byte, error) {
	u, err := oneData(fp, sources, user, userB64, userRef, "userDataBase64", "secretRef", []string{"userdata", "userData"})
	if err != nil {
		return nil, nil, err
	}
	n, err := oneData(fp, sources, network, networkB64, networkRef, "networkDataBase64", "networkDataSecretRef", []string{"networkdata", "networkData"})
	if err != nil {
		return nil, nil, err
	}
	if len(u) == 0 && len(n) == 0 {
		return nil, nil, field.Required(fp, "userData, userDataBase64, secretRef, networkData, networkDataBase64 or networkDataSecretRef")
	}
	return u, n, nil
}

func oneData(fp *field.Path, sources map[Source][]File, raw, b64 string, ref *k8sv1.LocalObjectReference,
	b64Field, refField string, keys []string,
) ([]byte, error) {
	if ref != nil && ref.Name != "" {
		rp := fp.Child(refField, "name")
		files, ok := sources[Source{Secret, ref.Name}]
		if !ok {
			return nil, field.NotFound(rp, ref.Name)
		}
		for _, k := range keys {
			for _, f := range files {
				if f.Path == k {
					return f.Data, nil
				}
			}
		}
		return nil, NotReady(field.Invalid(rp, ref.Name, "the secret's folder has no "+strings.Join(keys, " or ")+" file"))
	}
	if raw != "" {
		return []byte(raw), nil
	}
	if b64 != "" {
		data, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			var ce base64.CorruptInputError
			detail := "not valid base64"
			if errors.As(err, &ce) {
				detail += " (bad byte at offset " + strconv.FormatInt(int64(ce), 10) + ")"
			}
			return nil, field.Invalid(fp.Child(b64Field), hiddenValue, detail)
		}
		return data, nil
	}
	return nil, nil
}

// instanceID is NoCloud's instance-id: the firmware UUID, as KubeVirt gives
// it (api.Default derives it from namespace and name), or
// <name>.<namespace> without one.
func instanceID(vmi *v1.VirtualMachineInstance) string {
	if id := firmwareUUID(vmi); id != "" {
		return id
	}
	return vmi.Name + "." + vmi.Namespace
}

func firmwareUUID(vmi *v1.VirtualMachineInstance) string {
	if fw := vmi.Spec.Domain.Firmware; fw != nil {
		return string(fw.UUID)
	}
	return ""
}

// cloudInitHostname is KubeVirt's: spec.hostname, else the VMI's name up to
// its first dot, at most 63 characters.
func cloudInitHostname(vmi *v1.VirtualMachineInstance) string {
	if vmi.Spec.Hostname != "" {
		return vmi.Spec.Hostname
	}
	h, _, _ := strings.Cut(vmi.Name, ".")
	if len(h) > 63 {
		h = h[:63]
	}
	return h
}

// accessCredentialKeys returns the SSH public keys of spec.accessCredentials
// that propagate through noCloud (or configDrive), numbered "0", "1", ...:
// every non-empty file at the top of each key secret's folder.
func accessCredentialKeys(vmi *v1.VirtualMachineInstance, sources map[Source][]File, noCloud bool) (map[string]string, error) {
	keys := map[string]string{}
	for i, ac := range vmi.Spec.AccessCredentials {
		name, ok := propagatedKeySecret(ac, noCloud, !noCloud)
		if !ok {
			continue
		}
		files, ok := sources[Source{Secret, name}]
		if !ok {
			return nil, field.NotFound(accessCredentialSecretPath(i), name)
		}
		for _, f := range files {
			if k := strings.TrimSpace(string(f.Data)); k != "" && !strings.Contains(f.Path, "/") {
				keys[strconv.Itoa(len(keys))] = k
			}
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return keys, nil
}
