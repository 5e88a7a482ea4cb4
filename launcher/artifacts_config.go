package launcher

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/internal/iso"
)

// defaultConfigLabel is the label of config ISOs without a volumeLabel,
// KubeVirt's.
const defaultConfigLabel = "cfgdata"

// maxConfigBytes bounds the files of one config ISO (Kubernetes bounds a
// configMap or secret to 1 MiB).
const maxConfigBytes = 16 << 20

// configISO plans the ISO of a configMap, secret, serviceAccount or
// downwardAPI volume, to be rewritten only when its content changed.
func (p *planner) configISO(a convert.HostArtifact) error {
	files, label, labelPath, err := configFiles(p.vmi, a.Index, p.sources)
	if err != nil {
		return err
	}
	if label == "" {
		label = defaultConfigLabel
	}
	img, err := iso.Build(label, files)
	if err != nil {
		if labelPath != nil && strings.Contains(err.Error(), "label") {
			return field.Invalid(labelPath, label, err.Error())
		}
		return fmt.Errorf("volume %s: %w", a.Volume, err)
	}
	return p.writePlan(a, img)
}

// configFiles returns the files of a config volume and its label.
func configFiles(vmi *v1.VirtualMachineInstance, index int, sources ConfigSources) ([]iso.File, string, *field.Path, error) {
	vol := &vmi.Spec.Volumes[index]
	vp := field.NewPath("spec", "volumes").Index(index)
	var (
		folders  map[string]string
		name     string
		fp       *field.Path
		optional bool
		label    string
		lp       *field.Path
		what     string
	)
	switch {
	case vol.ConfigMap != nil:
		folders, name, what = sources.ConfigMaps, vol.ConfigMap.Name, "ConfigSources.ConfigMaps"
		fp, lp = vp.Child("configMap", "name"), vp.Child("configMap", "volumeLabel")
		optional, label = vol.ConfigMap.Optional != nil && *vol.ConfigMap.Optional, vol.ConfigMap.VolumeLabel
	case vol.Secret != nil:
		folders, name, what = sources.Secrets, vol.Secret.SecretName, "ConfigSources.Secrets"
		fp, lp = vp.Child("secret", "secretName"), vp.Child("secret", "volumeLabel")
		optional, label = vol.Secret.Optional != nil && *vol.Secret.Optional, vol.Secret.VolumeLabel
	case vol.ServiceAccount != nil:
		folders, name, what = sources.ServiceAccounts, vol.ServiceAccount.ServiceAccountName, "ConfigSources.ServiceAccounts"
		fp = vp.Child("serviceAccount", "serviceAccountName")
	case vol.DownwardAPI != nil:
		files, err := downwardAPIFiles(vmi, vol.DownwardAPI, vp.Child("downwardAPI"))
		return files, vol.DownwardAPI.VolumeLabel, vp.Child("downwardAPI", "volumeLabel"), err
	default:
		return nil, "", nil, field.Required(vp, "a configMap, secret, serviceAccount or downwardAPI source")
	}
	dir, ok := folders[name]
	if !ok {
		if optional {
			return nil, label, lp, nil
		}
		return nil, "", nil, field.Invalid(fp, name, "no local folder for it in "+what)
	}
	files, err := readFolder(dir, maxConfigBytes)
	if err != nil {
		return nil, "", nil, notReady(field.Invalid(fp, name, fmt.Sprintf("%s folder: %v", what, err)))
	}
	return files, label, lp, nil
}

// readFolder reads the regular files under dir, recursively, as ISO files.
// Names starting with ".." (kubelet's atomic-writer bookkeeping) are
// skipped; symbolic links are followed only when they stay inside dir.
func readFolder(dir string, limit int64) ([]iso.File, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", dir)
	}
	var files []iso.File
	var total int64
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		if depth > 16 {
			return fmt.Errorf("folders nested too deep at %s", rel)
		}
		entries, err := os.ReadDir(filepath.Join(root, rel))
		if err != nil {
			return err
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "..") {
				continue
			}
			r := filepath.Join(rel, e.Name())
			p, err := resolveInside(root, r)
			if err != nil {
				return err
			}
			st, err := os.Stat(p)
			if err != nil {
				return err
			}
			switch {
			case st.IsDir():
				if err := walk(r, depth+1); err != nil {
					return err
				}
			case st.Mode().IsRegular():
				total += st.Size()
				if total > limit {
					return fmt.Errorf("more than %d bytes of files", limit)
				}
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				files = append(files, iso.File{Path: filepath.ToSlash(r), Data: data})
			}
		}
		return nil
	}
	if err := walk("", 0); err != nil {
		return nil, err
	}
	slices.SortFunc(files, func(a, b iso.File) int { return strings.Compare(a.Path, b.Path) })
	return files, nil
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
