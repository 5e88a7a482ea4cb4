package hostfiles

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
)

// MaxSourceBytes bounds the files read from one config source's folder
// (Kubernetes bounds a configMap or secret to 1 MiB).
const MaxSourceBytes = 16 << 20

// maxSourceDepth bounds the nesting of folders inside a config source.
const maxSourceDepth = 16

// Folders map the names of config sources to the local folders that back
// them: each key is a configMap, secret or service account name, each
// value a folder whose regular files are the source's files.
type Folders map[hostplan.SourceKind]map[string]string

// ReadSources reads the files of every config source of reqs that folders
// maps (one that it does not map is left out: the plan decides). A folder
// that cannot be read is ErrNotReady, with the field that names the
// source. Names starting with ".." are skipped, as in the folders kubelet
// writes; symbolic links are followed only when they stay inside the
// folder.
func ReadSources(reqs []hostplan.SourceRequest, folders Folders) (map[hostplan.Source][]hostplan.File, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	out := make(map[hostplan.Source][]hostplan.File, len(reqs))
	for _, r := range reqs {
		dir, ok := folders[r.Kind][r.Name]
		if !ok {
			continue
		}
		files, err := readFolder(dir, MaxSourceBytes)
		if err != nil {
			return nil, hostplan.NotReady(field.Invalid(r.Field, r.Name, fmt.Sprintf("%s folder: %v", r.Kind, err)))
		}
		out[r.Source] = files
	}
	return out, nil
}

// readFolder reads the regular files under dir, recursively, sorted by
// path, at most limit bytes in all.
func readFolder(dir string, limit int64) ([]hostplan.File, error) {
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
	var files []hostplan.File
	var total int64
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		if depth > maxSourceDepth {
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
				files = append(files, hostplan.File{Path: filepath.ToSlash(r), Data: data})
			}
		}
		return nil
	}
	if err := walk("", 0); err != nil {
		return nil, err
	}
	slices.SortFunc(files, func(a, b hostplan.File) int { return strings.Compare(a.Path, b.Path) })
	return files, nil
}

// resolveInside resolves dir/rel and refuses a result outside dir.
func resolveInside(dir, rel string) (string, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	p, err := filepath.EvalSymlinks(filepath.Join(root, rel))
	if err != nil {
		return "", err
	}
	if p != root && !strings.HasPrefix(p, root+string(filepath.Separator)) {
		return "", fmt.Errorf("%s leads outside its folder", rel)
	}
	return p, nil
}
