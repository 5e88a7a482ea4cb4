package testguest

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Modules are the kernel modules the guest loads, with what they need
// before them: virtio PCI, block, network and SCSI (for CD-ROMs on the
// scsi bus), ISO9660, virtiofs, virtio serial ports (the downward metrics
// channel), and the ACPI power button with evdev for acpid.
// Debian's cloud kernel, which the kernel-boot guest runs, has no AHCI,
// e1000e or USB storage driver: SATA disks stay invisible to it, and VMIs
// that need them boot a bootable image (BootImages).
var Modules = []string{
	"virtio_pci", "virtio_blk", "virtio_net", "virtio_scsi",
	"sd_mod", "sr_mod", "isofs", "virtiofs", "virtio_console", "button", "evdev",
}

// BootModules are loaded after Modules by the guest of the bootable
// images, whose kernel is Debian's generic one: SATA (AHCI, probed while
// it loads), USB storage on xHCI, the e1000e NIC, and the drivers of the
// other device areas of a VMI (virtio RNG and balloon, the
// i6300ESB watchdog, HD audio, USB HID for the tablet).
var BootModules = []string{
	"ahci", "xhci_pci", "usb_storage", "e1000e",
	"virtio_rng", "virtio_balloon", "i6300esb",
	"snd_hda_intel", "snd_hda_codec_generic", "usbhid", "hid_generic",
}

// moduleArgs are parameters given to a module when it is loaded.
var moduleArgs = map[string]string{
	// Scan SCSI buses while loading, so disks exist when the report runs.
	"scsi_mod": "scan=sync",
	// Scan a USB disk as soon as it is found, not a second later.
	"usb_storage": "delay_use=0",
}

// kernelModule is one module file of the kernel tree.
type kernelModule struct {
	name    string // module name, with underscores
	rel     string // path relative to lib/modules/<version>/
	depends []string
}

// moduleName normalises a module file or dependency name.
func moduleName(s string) string {
	s = filepath.Base(s)
	s = strings.TrimSuffix(s, ".xz")
	s = strings.TrimSuffix(s, ".ko")
	return strings.ReplaceAll(s, "-", "_")
}

// indexModules maps each module name under dir (lib/modules/<version>) to
// its file.
func indexModules(dir string) (map[string]*kernelModule, error) {
	idx := map[string]*kernelModule{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".ko") {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		idx[moduleName(p)] = &kernelModule{name: moduleName(p), rel: rel}
		return nil
	})
	return idx, err
}

// modinfoDepends reads the "depends=" field of a module's .modinfo section
// (what depmod writes to modules.dep, which the Debian package leaves to its
// postinst and so does not ship).
func modinfoDepends(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("%s: no .modinfo section", path)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, err
	}
	var deps []string
	for _, field := range bytes.Split(data, []byte{0}) {
		if v, ok := bytes.CutPrefix(field, []byte("depends=")); ok && len(v) > 0 {
			for _, d := range strings.Split(string(v), ",") {
				deps = append(deps, moduleName(d))
			}
		}
	}
	return deps, nil
}

// loadOrder returns the modules to load for wanted, dependencies first, in
// a stable order (wanted's order, depth-first).
func loadOrder(modDir string, wanted []string) ([]*kernelModule, error) {
	idx, err := indexModules(modDir)
	if err != nil {
		return nil, err
	}
	var order []*kernelModule
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name, from string) error
	visit = func(name, from string) error {
		switch state[name] {
		case 2:
			return nil
		case 1:
			return fmt.Errorf("module dependency cycle at %s", name)
		}
		m := idx[name]
		if m == nil {
			if from == "" {
				return fmt.Errorf("kernel module %s not found under %s", name, modDir)
			}
			return fmt.Errorf("kernel module %s (needed by %s) not found under %s", name, from, modDir)
		}
		state[name] = 1
		deps, err := modinfoDepends(filepath.Join(modDir, m.rel))
		if err != nil {
			return err
		}
		m.depends = deps
		for _, d := range deps {
			if err := visit(d, name); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, m)
		return nil
	}
	for _, w := range wanted {
		if err := visit(w, ""); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// kernelVersion returns the single version folder under root/lib/modules.
func kernelVersion(root string) (string, error) {
	entries, err := os.ReadDir(filepath.Join(root, "lib", "modules"))
	if err != nil {
		return "", fmt.Errorf("kernel tree %s: %w (run .ci/prepare-host.sh)", root, err)
	}
	var versions []string
	for _, e := range entries {
		if e.IsDir() {
			versions = append(versions, e.Name())
		}
	}
	if len(versions) != 1 {
		return "", fmt.Errorf("kernel tree %s: want one version under lib/modules, found %q", root, versions)
	}
	return versions[0], nil
}
