package api

import (
	"encoding/base64"
	"fmt"
	"path"
	"strings"
	"unicode"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/vocab"
)

// Cloud-init limits of KubeVirt: inline user data and network data of at
// most 2 KiB each (larger data goes in a Secret).
const (
	maxCloudInitUserData    = 2048
	maxCloudInitNetworkData = 2048
	// maxImageRef is the longest container image reference accepted.
	maxImageRef = 4096
)

// MaxDiskCapacity is the largest disk a VMI may ask to have created
// (emptyDisk and hostDisk capacity): 1Pi, this library's own limit, so that
// absurd sizes (2^63 bytes, 10Ei) are refused on their path instead of
// failing in qemu-img on the host.
const MaxDiskCapacity int64 = 1 << 50

// reservedContainerPaths are the prefixes KubeVirt keeps for itself in the
// launcher pod.
var reservedContainerPaths = []string{"/var/run/kubevirt", "/var/run/libvirt"}

// volumeSources lists the sources a volume can have, for counting.
func volumeSources(v *v1.Volume) int {
	n := 0
	for _, set := range []bool{
		v.PersistentVolumeClaim != nil, v.Sysprep != nil, v.CloudInitNoCloud != nil,
		v.CloudInitConfigDrive != nil, v.ContainerDisk != nil, v.Ephemeral != nil,
		v.EmptyDisk != nil, v.HostDisk != nil, v.DataVolume != nil, v.ConfigMap != nil,
		v.Secret != nil, v.DownwardAPI != nil, v.ServiceAccount != nil,
		v.DownwardMetrics != nil, v.MemoryDump != nil, v.ContainerPath != nil,
	} {
		if set {
			n++
		}
	}
	return n
}

// validateVolumes applies KubeVirt's volume rules — unique names, exactly
// one source, every volume used by a disk or filesystem (containerPath
// volumes by a filesystem, outside KubeVirt's own paths), at most one
// serviceAccount, downwardMetrics and memoryDump volume, named DataVolumes,
// ConfigMaps, Secrets and service accounts, hostDisk path and type (capacity
// only for DiskOrCreate), containerDisk paths that are absolute and clean —
// and this library's own: volume names that are DNS-1123 labels (as the API
// documents), names of PVCs, DataVolumes, ConfigMaps, Secrets and service
// accounts that are DNS-1123 subdomains (they become file names on a host),
// a containerDisk image without spaces, control characters or ".." (no
// image reference has one), absolute and
// clean hostDisk paths (no ".."), and emptyDisk and hostDisk capacities
// above zero and at most MaxDiskCapacity.
// Utility volumes, which KubeVirt only hotplugs, are refused at creation.
func validateVolumes(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	devs := &vmi.Spec.Domain.Devices
	disks := make(map[string]bool, len(devs.Disks))
	for _, d := range devs.Disks {
		disks[d.Name] = true
	}
	filesystems := make(map[string]bool, len(devs.Filesystems))
	for _, f := range devs.Filesystems {
		filesystems[f.Name] = true
	}
	seen := newUniqueNames(volumesPath)
	counts := map[string]int{}
	for i := range vmi.Spec.Volumes {
		v := &vmi.Spec.Volumes[i]
		p := volumesPath.Index(i)
		namePath := p.Child("name")
		if v.Name == "" {
			errs = append(errs, field.Required(namePath, "a volume needs a name"))
		} else {
			errs = appendMsgs(errs, namePath, v.Name, dns1123Label(v.Name))
			if e := seen.add(i, v.Name, ""); e != nil {
				errs = append(errs, e)
			}
		}
		if n := volumeSources(v); n != 1 {
			errs = append(errs, field.Invalid(p, v.Name, fmt.Sprintf("a volume must have exactly one source, it has %d", n)))
		}
		if v.MemoryDump == nil && v.Name != "" && !disks[v.Name] && !filesystems[v.Name] {
			errs = append(errs, field.Invalid(namePath, v.Name, "no disk or filesystem uses this volume"))
		}
		switch {
		case v.ServiceAccount != nil:
			counts["serviceAccount"]++
		case v.DownwardMetrics != nil:
			counts["downwardMetrics"]++
		case v.MemoryDump != nil:
			counts["memoryDump"]++
		}
		errs = append(errs, validateVolumeSource(v, p, disks[v.Name], filesystems[v.Name])...)
	}
	if vmi.Spec.UtilityVolumes != nil {
		errs = append(errs, field.Forbidden(specPath.Child("utilityVolumes"), "utility volumes can only be hotplugged into a running VMI, not created with it"))
	}
	for _, kind := range []string{"serviceAccount", "downwardMetrics", "memoryDump"} {
		if counts[kind] > 1 {
			errs = append(errs, field.Invalid(volumesPath, counts[kind], "at most one "+kind+" volume is allowed"))
		}
	}
	return errs
}

// validateVolumeSource checks the source of one volume.
func validateVolumeSource(v *v1.Volume, p *field.Path, hasDisk, hasFilesystem bool) field.ErrorList {
	var errs field.ErrorList
	objectName := func(fp *field.Path, name, what string) {
		if name == "" {
			errs = append(errs, field.Required(fp, "the name of the "+what))
			return
		}
		errs = appendMsgs(errs, fp, name, dns1123Subdomain(name))
	}
	switch {
	case v.ContainerDisk != nil:
		cd := v.ContainerDisk
		ip := p.Child("containerDisk", "image")
		switch {
		case cd.Image == "":
			errs = append(errs, field.Required(ip, "the container image that holds the disk"))
		case len(cd.Image) > maxImageRef:
			errs = append(errs, field.TooLong(ip, "", maxImageRef))
		case strings.IndexFunc(cd.Image, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
			errs = append(errs, field.Invalid(ip, cd.Image, "an image reference has no spaces or control characters"))
		case strings.Contains(cd.Image, ".."):
			errs = append(errs, field.Invalid(ip, cd.Image, `must not contain ".."`))
		}
		if cd.Path != "" {
			errs = append(errs, validateAbsPath(p.Child("containerDisk", "path"), cd.Path)...)
		}
	case v.PersistentVolumeClaim != nil:
		objectName(p.Child("persistentVolumeClaim", "claimName"), v.PersistentVolumeClaim.ClaimName, "PersistentVolumeClaim")
	case v.Ephemeral != nil:
		if v.Ephemeral.PersistentVolumeClaim == nil {
			errs = append(errs, field.Required(p.Child("ephemeral", "persistentVolumeClaim"), "the PersistentVolumeClaim under the ephemeral overlay"))
		} else {
			objectName(p.Child("ephemeral", "persistentVolumeClaim", "claimName"), v.Ephemeral.PersistentVolumeClaim.ClaimName, "PersistentVolumeClaim")
		}
	case v.DataVolume != nil:
		objectName(p.Child("dataVolume", "name"), v.DataVolume.Name, "DataVolume")
	case v.ConfigMap != nil:
		objectName(p.Child("configMap", "name"), v.ConfigMap.Name, "ConfigMap")
	case v.Secret != nil:
		objectName(p.Child("secret", "secretName"), v.Secret.SecretName, "Secret")
	case v.ServiceAccount != nil:
		objectName(p.Child("serviceAccount", "serviceAccountName"), v.ServiceAccount.ServiceAccountName, "service account")
	case v.Sysprep != nil:
		sp := p.Child("sysprep")
		switch {
		case v.Sysprep.ConfigMap != nil && v.Sysprep.Secret != nil:
			errs = append(errs, field.Invalid(sp, v.Name, "a sysprep volume takes either a configMap or a secret, not both"))
		case v.Sysprep.ConfigMap != nil:
			objectName(sp.Child("configMap", "name"), v.Sysprep.ConfigMap.Name, "ConfigMap")
		case v.Sysprep.Secret != nil:
			objectName(sp.Child("secret", "name"), v.Sysprep.Secret.Name, "Secret")
		default:
			errs = append(errs, field.Required(sp, "a configMap or a secret holding the answer file"))
		}
	case v.EmptyDisk != nil:
		switch c := v.EmptyDisk.Capacity; {
		case c.Sign() <= 0:
			errs = append(errs, field.Invalid(p.Child("emptyDisk", "capacity"), c.String(), "must be greater than 0"))
		case c.CmpInt64(MaxDiskCapacity) > 0:
			errs = append(errs, field.Invalid(p.Child("emptyDisk", "capacity"), c.String(), "must not be more than 1Pi"))
		}
	case v.HostDisk != nil:
		errs = append(errs, validateHostDisk(v.HostDisk, p.Child("hostDisk"))...)
	case v.ContainerPath != nil:
		cp := p.Child("containerPath")
		if hasDisk {
			errs = append(errs, field.Invalid(cp, v.Name, "a containerPath volume must be a filesystem, not a disk"))
		}
		if !hasFilesystem {
			errs = append(errs, field.Invalid(cp, v.Name, "a containerPath volume needs a filesystem of the same name in "+devicesPath.Child("filesystems").String()))
		}
		for _, prefix := range reservedContainerPaths {
			if strings.HasPrefix(v.ContainerPath.Path, prefix) {
				errs = append(errs, field.Invalid(cp.Child("path"), v.ContainerPath.Path, "paths under "+prefix+" are reserved for KubeVirt"))
				break
			}
		}
	}
	return errs
}

// validateHostDisk checks a hostDisk volume.
func validateHostDisk(hd *v1.HostDisk, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if hd.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), "the path of the disk image on the host"))
	} else {
		errs = append(errs, validateAbsPath(p.Child("path"), hd.Path)...)
	}
	if !vocab.HostDiskTypes.Has(string(hd.Type)) {
		errs = append(errs, field.NotSupported(p.Child("type"), hd.Type, vocab.HostDiskTypes))
	}
	if hd.Type == v1.HostDiskExists && !hd.Capacity.IsZero() {
		errs = append(errs, field.Invalid(p.Child("capacity"), hd.Capacity.String(), "only allowed with type "+string(v1.HostDiskExistsOrCreate)))
	}
	if hd.Type == v1.HostDiskExistsOrCreate && hd.Capacity.Sign() < 0 {
		errs = append(errs, field.Invalid(p.Child("capacity"), hd.Capacity.String(), "must not be negative"))
	}
	if hd.Type == v1.HostDiskExistsOrCreate && hd.Capacity.CmpInt64(MaxDiskCapacity) > 0 {
		errs = append(errs, field.Invalid(p.Child("capacity"), hd.Capacity.String(), "must not be more than 1Pi"))
	}
	return errs
}

// validateAbsPath checks, as KubeVirt does for paths inside images, that a
// path is absolute, clean (no ".", ".." or doubled slashes) and not "/";
// NUL characters are refused too.
func validateAbsPath(p *field.Path, s string) field.ErrorList {
	switch {
	case s == "/":
		return field.ErrorList{field.Invalid(p, s, "must not be the root directory")}
	case strings.ContainsRune(s, 0):
		return field.ErrorList{field.Invalid(p, s, "must not contain NUL characters")}
	case !strings.HasPrefix(s, "/") || path.Clean(s) != strings.TrimSuffix(s, "/"):
		return field.ErrorList{field.Invalid(p, s, "must be an absolute path without relative components (no '.' or '..')")}
	}
	return nil
}

// cloudInitData is what both cloud-init sources have in common.
type cloudInitData struct {
	kind                           string
	userData, userDataBase64       string
	userDataSecret                 *k8sv1.LocalObjectReference
	networkData, networkDataBase64 string
	networkDataSecret              *k8sv1.LocalObjectReference
}

// validateCloudInit applies KubeVirt's cloud-init rules to every
// cloudInitNoCloud and cloudInitConfigDrive volume: at most one source of
// user data (userData, userDataBase64, secretRef) and of network data,
// at least one of the two, base64 that decodes, and at most 2 KiB of inline
// data each; secret names must be DNS-1123 subdomains (this library's own).
func validateCloudInit(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	for i := range vmi.Spec.Volumes {
		v := &vmi.Spec.Volumes[i]
		var c cloudInitData
		switch {
		case v.CloudInitNoCloud != nil:
			s := v.CloudInitNoCloud
			c = cloudInitData{"cloudInitNoCloud", s.UserData, s.UserDataBase64, s.UserDataSecretRef, s.NetworkData, s.NetworkDataBase64, s.NetworkDataSecretRef}
		case v.CloudInitConfigDrive != nil:
			s := v.CloudInitConfigDrive
			c = cloudInitData{"cloudInitConfigDrive", s.UserData, s.UserDataBase64, s.UserDataSecretRef, s.NetworkData, s.NetworkDataBase64, s.NetworkDataSecretRef}
		default:
			continue
		}
		p := volumesPath.Index(i).Child(c.kind)
		userSources, userLen, e := cloudInitSource(p, "userData", "userDataBase64", "secretRef", c.userData, c.userDataBase64, c.userDataSecret)
		errs = append(errs, e...)
		netSources, netLen, e := cloudInitSource(p, "networkData", "networkDataBase64", "networkDataSecretRef", c.networkData, c.networkDataBase64, c.networkDataSecret)
		errs = append(errs, e...)
		if len(userSources) > 1 {
			errs = append(errs, field.Invalid(p, strings.Join(userSources, ", "), "only one of userData, userDataBase64 and secretRef may be set"))
		}
		if userLen > maxCloudInitUserData {
			errs = append(errs, tooLong(p.Child("userData"), fmt.Sprintf("user data is %d bytes, more than %d: put it in a Secret (secretRef)", userLen, maxCloudInitUserData)))
		}
		if len(netSources) > 1 {
			errs = append(errs, field.Invalid(p, strings.Join(netSources, ", "), "only one of networkData, networkDataBase64 and networkDataSecretRef may be set"))
		}
		if netLen > maxCloudInitNetworkData {
			errs = append(errs, tooLong(p.Child("networkData"), fmt.Sprintf("network data is %d bytes, more than %d: put it in a Secret (networkDataSecretRef)", netLen, maxCloudInitNetworkData)))
		}
		if len(userSources) == 0 && len(netSources) == 0 {
			errs = append(errs, field.Required(p, "needs user data or network data (userData, userDataBase64, secretRef, networkData, networkDataBase64 or networkDataSecretRef)"))
		}
	}
	return errs
}

// cloudInitSource lists the sources set for one kind of cloud-init data and
// returns the length of the inline data. Values never appear in errors:
// user data may hold secrets.
func cloudInitSource(p *field.Path, plainName, b64Name, secretName, plain, b64 string, secret *k8sv1.LocalObjectReference) ([]string, int, field.ErrorList) {
	var errs field.ErrorList
	var set []string
	size := 0
	if secret != nil && secret.Name != "" {
		set = append(set, secretName)
		errs = appendMsgs(errs, p.Child(secretName, "name"), secret.Name, dns1123Subdomain(secret.Name))
	}
	if b64 != "" {
		set = append(set, b64Name)
		decoded, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child(b64Name), "<redacted>", "not valid base64"))
		}
		size = len(decoded)
	}
	if plain != "" {
		set = append(set, plainName)
		size = len(plain)
	}
	return set, size, errs
}

// tooLong is a TooLong error with its own detail and no value (the value
// may be secret or huge).
func tooLong(p *field.Path, detail string) *field.Error {
	return &field.Error{Type: field.ErrorTypeTooLong, Field: p.String(), BadValue: "", Detail: detail}
}
