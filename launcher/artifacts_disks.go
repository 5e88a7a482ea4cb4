package launcher

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// qemuImg is the qemu-img binary (package qemu-utils).
var qemuImg = "qemu-img"

// overlay plans a qcow2 overlay over a containerDisk image or an
// ephemeral volume's claim, unless it exists already (then it is left
// alone: the guest may have written to it).
func (p *planner) overlay(a convert.HostArtifact) error {
	if exists, err := existingFile(a.Path); err != nil || exists {
		if err != nil {
			return notReady(err)
		}
		return p.add(a, Artifact{Action: ActionKeep, BackingPath: a.BackingPath, BackingFormat: a.BackingFormat})
	}
	vol := &p.vmi.Spec.Volumes[a.Index]
	vp := field.NewPath("spec", "volumes").Index(a.Index)
	var fp *field.Path
	var value, missing string
	if vol.ContainerDisk != nil {
		if err := checkAbsolute("HostLayout.ImageStore", p.layout.ImageStore); err != nil {
			return err
		}
		fp, value = vp.Child("containerDisk", "image"), vol.ContainerDisk.Image
		missing = "image not found in the image store (no " + a.BackingPath + ")"
	} else {
		fp, value = vp.Child("ephemeral", "persistentVolumeClaim", "claimName"), vol.Ephemeral.PersistentVolumeClaim.ClaimName
		missing = "the claim's disk " + a.BackingPath + " does not exist"
	}
	if !filepath.IsAbs(a.BackingPath) {
		return field.Invalid(fp, value, "backing disk path "+a.BackingPath+" is not absolute")
	}
	st, err := os.Stat(a.BackingPath)
	if errors.Is(err, fs.ErrNotExist) {
		return notReady(field.Invalid(fp, value, missing))
	}
	if err != nil {
		return notReady(field.Invalid(fp, value, err.Error()))
	}
	if st.IsDir() {
		return notReady(field.Invalid(fp, value, a.BackingPath+" is a folder, not a disk image"))
	}
	format := a.BackingFormat
	if format == "" {
		if format, err = probeFormat(p.ctx, a.BackingPath); err != nil {
			return notReady(field.Invalid(fp, value, err.Error()))
		}
	}
	if err := p.owner.canReach(filepath.Dir(a.BackingPath)); err != nil {
		return notReady(field.Invalid(fp, value, err.Error()))
	}
	return p.add(a, Artifact{Action: ActionCreate, BackingPath: a.BackingPath, BackingFormat: format})
}

// emptyDisk plans an empty qcow2 disk of the volume's capacity unless it
// exists already.
func (p *planner) emptyDisk(a convert.HostArtifact) error {
	if exists, err := existingFile(a.Path); err != nil || exists {
		if err != nil {
			return notReady(err)
		}
		return p.add(a, Artifact{Action: ActionKeep})
	}
	ed := p.vmi.Spec.Volumes[a.Index].EmptyDisk
	fp := field.NewPath("spec", "volumes").Index(a.Index).Child("emptyDisk", "capacity")
	size := ed.Capacity.Value()
	if size <= 0 {
		return field.Invalid(fp, ed.Capacity.String(), "must be greater than zero")
	}
	return p.add(a, Artifact{Action: ActionCreate, Size: size})
}

// hostDisk plans a hostDisk of type DiskOrCreate: a sparse raw file of its
// capacity when it does not exist. Its folder must exist.
func (p *planner) hostDisk(a convert.HostArtifact) error {
	hd := p.vmi.Spec.Volumes[a.Index].HostDisk
	vp := field.NewPath("spec", "volumes").Index(a.Index).Child("hostDisk")
	if !filepath.IsAbs(a.Path) {
		return field.Invalid(vp.Child("path"), hd.Path, "must be an absolute path")
	}
	st, err := os.Stat(a.Path)
	switch {
	case err == nil && st.Mode().IsRegular():
		return p.add(a, Artifact{Action: ActionKeep})
	case err == nil:
		return notReady(field.Invalid(vp.Child("path"), hd.Path, "exists and is not a regular file"))
	case !errors.Is(err, fs.ErrNotExist):
		return notReady(field.Invalid(vp.Child("path"), hd.Path, err.Error()))
	}
	size := hd.Capacity.Value()
	if size <= 0 {
		return field.Required(vp.Child("capacity"), "a hostDisk of type DiskOrCreate that does not exist needs a capacity")
	}
	if st, err := os.Stat(filepath.Dir(a.Path)); err != nil || !st.IsDir() {
		return notReady(field.Invalid(vp.Child("path"), hd.Path, "its folder does not exist"))
	}
	return p.add(a, Artifact{Action: ActionCreate, Size: size})
}

// checkKernelBoot checks that the kernel and initrd of
// spec.domain.firmware.kernelBoot.container are in the image store.
func (p *planner) checkKernelBoot() error {
	fw := p.vmi.Spec.Domain.Firmware
	if fw == nil || fw.KernelBoot == nil || fw.KernelBoot.Container == nil {
		return nil
	}
	c := fw.KernelBoot.Container
	cp := field.NewPath("spec", "domain", "firmware", "kernelBoot", "container")
	if err := checkAbsolute("HostLayout.ImageStore", p.layout.ImageStore); err != nil {
		return err
	}
	folder := p.layout.ImageFolder(c.Image)
	if st, err := os.Stat(folder); err != nil || !st.IsDir() {
		return notReady(field.Invalid(cp.Child("image"), c.Image, "image not found in the image store (no folder "+folder+")"))
	}
	paths := p.layout.Paths(p.vmi)
	for _, f := range []struct {
		name, value, path string
	}{{"kernelPath", c.KernelPath, paths.Kernel}, {"initrdPath", c.InitrdPath, paths.Initrd}} {
		if f.path == "" {
			continue
		}
		st, err := os.Stat(f.path)
		if err != nil || !st.Mode().IsRegular() {
			return notReady(field.Invalid(cp.Child(f.name), f.value, "not a file of image "+c.Image+" in the image store (no "+f.path+")"))
		}
		if err := p.owner.canReach(filepath.Dir(f.path)); err != nil {
			return notReady(field.Invalid(cp.Child("image"), c.Image, err.Error()))
		}
	}
	return nil
}

// qemuImgCreate runs qemu-img create with opts on a temporary file beside
// path (size empty for an overlay, which takes its backing file's) and
// renames it into place, so that no half-made disk is left under path. A
// disk that exists by now is left alone.
func (a *applier) qemuImgCreate(path string, opts []string, size string) error {
	if exists, err := existingFile(path); err != nil || exists {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	_ = os.Remove(tmp)
	args := append(append([]string{"create", "-q"}, opts...), tmp)
	if size != "" {
		args = append(args, size)
	}
	if _, err := runQemuImg(a.ctx, args...); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Chmod(tmp, artifactMode); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	a.created = append(a.created, path)
	return nil
}

// probeFormat returns the format of a disk image ("raw" or "qcow2"),
// refusing images with a backing file of their own: an image must not
// lead QEMU to files outside the image store.
func probeFormat(ctx context.Context, path string) (string, error) {
	out, err := runQemuImg(ctx, "info", "-U", "--output=json", path)
	if err != nil {
		return "", err
	}
	var info struct {
		Format          string `json:"format"`
		BackingFilename string `json:"backing-filename"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("qemu-img info %s: %w", path, err)
	}
	switch {
	case info.BackingFilename != "":
		return "", fmt.Errorf("image %s has a backing file of its own; images must be self-contained", path)
	case info.Format != "raw" && info.Format != "qcow2":
		return "", fmt.Errorf("image %s has format %q; raw or qcow2 images only", path, info.Format)
	}
	return info.Format, nil
}

// runQemuImg runs qemu-img and returns its standard output; its error
// holds qemu-img's message.
func runQemuImg(ctx context.Context, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, qemuImg, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("qemu-img %s: %s", args[0], msg)
	}
	return stdout.Bytes(), nil
}

// existingFile reports whether path exists as a regular file; anything
// else at path is an error.
func existingFile(path string) (bool, error) {
	st, err := os.Lstat(path)
	switch {
	case err == nil && st.Mode().IsRegular():
		return true, nil
	case err == nil:
		return false, fmt.Errorf("%s exists and is not a regular file", path)
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// checkHostDisks refuses a hostDisk whose path leaves the folders of
// HostLayout.HostDiskAllow once symbolic links are resolved: the
// converter checks the path as written, this checks where it leads (for a
// file still to be created, where its folder leads). A dangling symbolic
// link is refused too. Block devices under /dev/ are left to the
// lexical check: udev's links there (/dev/vg0/lv → ../dm-3) are the host's.
func (p *planner) checkHostDisks() error {
	for i := range p.vmi.Spec.Volumes {
		hd := p.vmi.Spec.Volumes[i].HostDisk
		if hd == nil || strings.HasPrefix(filepath.Clean(hd.Path), "/dev/") {
			continue
		}
		fp := field.NewPath("spec", "volumes").Index(i).Child("hostDisk", "path")
		real, err := resolvePath(filepath.Clean(hd.Path))
		if err != nil {
			return notReady(field.Invalid(fp, hd.Path, err.Error()))
		}
		if !underAllowed(real, p.layout.HostDiskAllow) {
			return field.Invalid(fp, hd.Path, "leads to "+real+" through a symbolic link, outside the folders of HostLayout.HostDiskAllow")
		}
	}
	return nil
}

// resolvePath resolves the symbolic links of p, an absolute clean path; of
// a path that does not exist yet, those of its longest existing prefix.
func resolvePath(p string) (string, error) {
	suffix := ""
	for cur := p; ; {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(real, suffix), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if _, lerr := os.Lstat(cur); lerr == nil {
			return "", fmt.Errorf("%s is a dangling symbolic link", cur)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		suffix = filepath.Join(filepath.Base(cur), suffix)
		cur = parent
	}
}

// underAllowed tells whether real lies under one of the absolute folders
// allow lists, each with its own symbolic links resolved ("/" allows all).
func underAllowed(real string, allow []string) bool {
	for _, dir := range allow {
		if !filepath.IsAbs(dir) {
			continue
		}
		dir = filepath.Clean(dir)
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			dir = r
		}
		if dir == "/" || strings.HasPrefix(real, dir+"/") {
			return true
		}
	}
	return false
}
