package hostplan

import (
	"fmt"
	"path"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// Host is the libvirt host a plan is made for, as data: who owns the
// domains it defines, how it places and converts VMIs, and what it has.
// The launcher fills it from its Config and what it probed of libvirt;
// a plan for another host (a migration's target) takes that host's.
type Host struct {
	// Owner names the launcher; every domain it defines records it.
	Owner string
	// Options are the converter's options on this host, its facts
	// included (DomainType, EFI, HostFacts...). Options.Layout must
	// be a convert.HostLayout with an absolute StateDir (and ImageStore,
	// for images not resolved): it places every file of the VMI. Make gives the converter a copy with
	// the VMI's resolved images in the layout's Images.
	Options convert.Options
	// Cluster holds the cluster-level choices that shape api.Default.
	Cluster api.ClusterConfig
	// QEMU is the user QEMU runs as: the VMI's state folder is given to
	// it, so that QEMU can create its sockets there, and the folders QEMU
	// opens files in must let it walk in. Nil: QEMU runs as the caller (or
	// as root), ownership is left alone.
	QEMU *User
}

// User is a user QEMU runs as.
type User struct {
	Name     string
	UID, GID int
	// Groups are its group and supplementary groups, for the check that
	// it can reach a folder.
	Groups []int
}

// layout returns the host's layout, refusing a layout the plan cannot
// place files with.
func (h Host) layout() (convert.HostLayout, error) {
	l, ok := h.Options.Layout.(convert.HostLayout)
	if !ok {
		return convert.HostLayout{}, fmt.Errorf("hostplan: Host.Options.Layout is %T, not a convert.HostLayout", h.Options.Layout)
	}
	if err := CheckFolder("HostLayout.StateDir", l.StateDir); err != nil {
		return convert.HostLayout{}, fmt.Errorf("hostplan: %w", err)
	}
	return l, nil
}

// CheckFolder refuses a folder the launcher would create or remove things
// in that is not absolute, or is the root.
func CheckFolder(what, dir string) error {
	if dir == "" || dir[0] != '/' || path.Clean(dir) == "/" {
		return fmt.Errorf("%s %q must be an absolute folder other than /", what, dir)
	}
	return nil
}
