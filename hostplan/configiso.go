package hostplan

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/iso"
)

// defaultConfigLabel is the label of config ISOs without a volumeLabel,
// KubeVirt's.
const defaultConfigLabel = "cfgdata"

// configISO returns the ISO of a configMap, secret, serviceAccount or
// downwardAPI volume.
func configISO(vmi *v1.VirtualMachineInstance, index int, sources map[Source][]File) ([]byte, error) {
	files, label, labelPath, err := configFiles(vmi, index, sources)
	if err != nil {
		return nil, err
	}
	if label == "" {
		label = defaultConfigLabel
	}
	img, err := iso.Build(label, files)
	if err != nil {
		if labelPath != nil && strings.Contains(err.Error(), "label") {
			return nil, field.Invalid(labelPath, label, err.Error())
		}
		return nil, fmt.Errorf("hostplan: volume %s: %w", vmi.Spec.Volumes[index].Name, err)
	}
	return img, nil
}

// configFolder returns the files of a configMap, secret, serviceAccount or
// downwardAPI volume that a filesystem shares, sorted by path (the ISO's
// files, without its label).
func configFolder(vmi *v1.VirtualMachineInstance, index int, sources map[Source][]File) ([]File, error) {
	files, _, _, err := configFiles(vmi, index, sources)
	if err != nil {
		return nil, err
	}
	out := make([]File, len(files))
	for i, f := range files {
		if !inFolder(f.Path) {
			return nil, fmt.Errorf("hostplan: volume %s: file %q is not a clean path inside its folder", vmi.Spec.Volumes[index].Name, f.Path)
		}
		out[i] = File{Path: f.Path, Data: f.Data}
	}
	return out, nil
}

// inFolder tells whether a file's path stays inside its folder: relative,
// clean, not the folder itself, without a NUL.
func inFolder(p string) bool {
	return p != "" && path.Clean(p) == p && !path.IsAbs(p) && p != "." && p != ".." &&
		!strings.HasPrefix(p, "../") && !strings.ContainsRune(p, 0)
}

// configSourceFolders names, for each kind of config source, where the
// launcher's configuration maps its names to folders: the message of a
// source that has none.
var configSourceFolders = map[SourceKind]string{
	ConfigMap:      "ConfigSources.ConfigMaps",
	Secret:         "ConfigSources.Secrets",
	ServiceAccount: "ConfigSources.ServiceAccounts",
}

// configFiles returns the files of a config volume, its label and the
// label's field.
func configFiles(vmi *v1.VirtualMachineInstance, index int, sources map[Source][]File) ([]iso.File, string, *field.Path, error) {
	vol := &vmi.Spec.Volumes[index]
	vp := volumesPath.Index(index)
	var (
		src      Source
		fp, lp   *field.Path
		optional bool
		label    string
	)
	switch {
	case vol.ConfigMap != nil:
		src, fp, lp = Source{ConfigMap, vol.ConfigMap.Name}, vp.Child("configMap", "name"), vp.Child("configMap", "volumeLabel")
		optional, label = vol.ConfigMap.Optional != nil && *vol.ConfigMap.Optional, vol.ConfigMap.VolumeLabel
	case vol.Secret != nil:
		src, fp, lp = Source{Secret, vol.Secret.SecretName}, vp.Child("secret", "secretName"), vp.Child("secret", "volumeLabel")
		optional, label = vol.Secret.Optional != nil && *vol.Secret.Optional, vol.Secret.VolumeLabel
	case vol.ServiceAccount != nil:
		src, fp = Source{ServiceAccount, vol.ServiceAccount.ServiceAccountName}, vp.Child("serviceAccount", "serviceAccountName")
	case vol.DownwardAPI != nil:
		files, err := downwardAPIFiles(vmi, vol.DownwardAPI, vp.Child("downwardAPI"))
		return files, vol.DownwardAPI.VolumeLabel, vp.Child("downwardAPI", "volumeLabel"), err
	default:
		return nil, "", nil, field.Required(vp, "a configMap, secret, serviceAccount or downwardAPI source")
	}
	files, ok := sources[src]
	if !ok {
		if optional {
			return nil, label, lp, nil
		}
		return nil, "", nil, field.Invalid(fp, src.Name, "no local folder for it in "+configSourceFolders[src.Kind])
	}
	out := make([]iso.File, len(files))
	for i, f := range files {
		out[i] = iso.File{Path: f.Path, Data: f.Data}
	}
	slices.SortFunc(out, func(a, b iso.File) int { return strings.Compare(a.Path, b.Path) })
	return out, label, lp, nil
}

// downwardAPIFiles renders a downwardAPI volume's fields from the VMI's
// metadata, as kubelet renders them in a pod (labels and annotations as
// sorted key="value" lines).
func downwardAPIFiles(vmi *v1.VirtualMachineInstance, src *v1.DownwardAPIVolumeSource, fp *field.Path) ([]iso.File, error) {
	var files []iso.File
	for i, f := range src.Fields {
		ip := fp.Child("fields").Index(i)
		if f.ResourceFieldRef != nil {
			return nil, field.NotSupported(ip.Child("resourceFieldRef"), f.ResourceFieldRef.Resource, []string{})
		}
		if f.FieldRef == nil {
			return nil, field.Required(ip.Child("fieldRef"), "")
		}
		value, ok := downwardAPIValue(vmi, f.FieldRef.FieldPath)
		if !ok {
			return nil, field.NotSupported(ip.Child("fieldRef", "fieldPath"), f.FieldRef.FieldPath,
				[]string{"metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels", "metadata.annotations", "metadata.labels['<key>']", "metadata.annotations['<key>']"})
		}
		files = append(files, iso.File{Path: f.Path, Data: []byte(value)})
	}
	return files, nil
}

func downwardAPIValue(vmi *v1.VirtualMachineInstance, path string) (string, bool) {
	switch path {
	case "metadata.name":
		return vmi.Name, true
	case "metadata.namespace":
		return vmi.Namespace, true
	case "metadata.uid":
		return string(vmi.UID), true
	case "metadata.labels":
		return formatMap(vmi.Labels), true
	case "metadata.annotations":
		return formatMap(vmi.Annotations), true
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": vmi.Labels, "metadata.annotations": vmi.Annotations} {
		if rest, ok := strings.CutPrefix(path, prefix+"['"); ok {
			if key, ok := strings.CutSuffix(rest, "']"); ok {
				return m[key], true
			}
		}
	}
	return "", false
}

// formatMap is kubelet's rendering of labels and annotations.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}
