package hostfiles

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
)

// QEMUImg is the qemu-img binary (package qemu-utils).
var QEMUImg = "qemu-img"

// DiskFormat returns the format of a disk image ("raw" or "qcow2"),
// refusing images with a backing file of their own: an image must not lead
// QEMU to files outside the image store.
func DiskFormat(ctx context.Context, path string) (string, error) {
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

// qemuImgCreate runs qemu-img create with opts on a temporary file beside
// path (size empty for an overlay, which takes its backing file's) and
// renames it into place, so that no half-made disk is left under path. A
// disk that exists by now is left alone.
func (m *maker) qemuImgCreate(path string, opts []string, size string) (Outcome, error) {
	if exists, err := existingFile(path); err != nil || exists {
		return Kept, err
	}
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	_ = os.Remove(tmp)
	args := append(append([]string{"create", "-q"}, opts...), tmp)
	if size != "" {
		args = append(args, size)
	}
	if _, err := runQemuImg(m.ctx, args...); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	if err := os.Chmod(tmp, hostplan.FileMode); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	m.made = append(m.made, path)
	return Made, nil
}

// runQemuImg runs qemu-img and returns its standard output; its error
// holds qemu-img's message.
func runQemuImg(ctx context.Context, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, QEMUImg, args...)
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
