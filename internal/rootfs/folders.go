package rootfs

import (
	"os"
	"path"
)

// mkdirs creates the folder dir and its parents, and marks them as
// folders so that no lower layer puts a file or link in their place. Each
// folder is made once: a folder already marked costs no lookup, and only
// the folders it adds are kept for Finish.
func (x *Extractor) mkdirs(dir string) error {
	made := len(x.folders)
	for d := dir; d != "."; d = path.Dir(d) {
		if _, ok := x.seen[d]; ok {
			break
		}
		x.seen[d] = false
		x.folders = append(x.folders, d)
	}
	if len(x.folders) == made {
		return nil
	}
	return wrote(x.root.MkdirAll(x.at(dir), folderMode))
}

// settleFolders sets the mode of every folder made and syncs it, then the
// root. It walks the tree of folders from the top, each opened in its
// parent's, so that a folder costs one lookup however deep it is (from the
// root, a chain of n folders would cost n²/2); it holds one folder open per
// level, at most maxDepth.
func (x *Extractor) settleFolders() error {
	children := map[string][]string{}
	for _, d := range x.folders {
		parent := path.Dir(d)
		children[parent] = append(children[parent], d)
	}
	return x.settle(x.root, ".", children)
}

// settle sets the modes of the folders under dir (open as r) and syncs
// them, then dir itself.
func (x *Extractor) settle(r *os.Root, dir string, children map[string][]string) error {
	for _, d := range children[dir] {
		base := path.Base(d)
		if err := r.Chmod(x.at(base), folderMode); err != nil {
			return wrote(err)
		}
		sub, err := r.OpenRoot(x.at(base))
		if err != nil {
			return wrote(err)
		}
		err = x.settle(sub, d, children)
		if cerr := sub.Close(); err == nil {
			err = wrote(cerr)
		}
		if err != nil {
			return err
		}
	}
	return wrote(syncFolder(r, x.at(".")))
}

// syncFolder flushes a folder's entries to disk.
func syncFolder(root *os.Root, name string) error {
	f, err := root.Open(name)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
