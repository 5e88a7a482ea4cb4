package launcher

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/imagestore"
)

// DefaultURI is the libvirt connection of a Config without URI.
const DefaultURI = "qemu:///system"

// Config says how a Launcher reaches libvirt, who it is, and how it places
// and converts VMIs. The zero value is usable: qemu:///system, the host's
// name as owner, the default folders, KVM, KubeVirt's cluster defaults, no
// logging.
//
// The launcher decides the rest of convert.Options from the host itself:
// the domain type (kvm, or qemu with Emulate), the OVMF files found, whether
// libvirt accepts memory hotplug, and, as on any plain host, a serial
// console log and explicit hugepage sizes.
type Config struct {
	// URI of the libvirt connection; DefaultURI when empty.
	URI string

	// Owner names this launcher, for example after its node. Every domain
	// it defines records its owner; a launcher lists, adopts and changes
	// only the domains it owns, so launchers with different owners can
	// share one libvirtd. Empty: the host's name.
	Owner string

	// Layout places each VMI on the host. An empty StateDir is
	// convert.DefaultStateDir, an empty ImageStore convert.DefaultImageStore.
	Layout convert.HostLayout

	// Emulate forces domain type "qemu" (TCG emulation) even where KVM is
	// available. Without it a host without KVM is refused.
	Emulate bool

	// Cluster holds the cluster-level choices that shape api.Default.
	Cluster api.ClusterConfig

	// Sources name the local folders behind configMap, secret and
	// serviceAccount volumes, and the user QEMU runs as.
	Sources ConfigSources

	// Images configures the image store the launcher pulls containerDisk
	// and kernel-boot images into (registries reached over plain HTTP,
	// credentials, size limit, progress reports). Its Root is ignored:
	// the store is Layout.ImageStore. Progress, when nil, goes to Logger.
	Images imagestore.Config

	// ImagePullSecrets maps the name of an imagePullSecret (a
	// containerDisk's or kernel-boot container's) to its credentials.
	// Secrets live in a cluster: a VMI naming one not mapped here is
	// refused with the field's path.
	ImagePullSecrets map[string]authn.Authenticator

	// HostDevices maps the name of each GPU, host device and SR-IOV
	// interface of a VMI to the host device behind it
	// (convert.Options.HostDevices).
	HostDevices map[string]convert.HostDevice

	// CPUSet lists the host CPUs dedicated vCPUs are pinned to, in order
	// (convert.Options.CPUSet).
	CPUSet []uint

	// SMBIOS are the strings of the guests' SMBIOS system table; empty:
	// KubeVirt's ("KubeVirt", "None").
	SMBIOS convert.SMBIOS

	// EFI names the OVMF files for EFI guests; empty: the first set found
	// on the host (Debian's, then Fedora's). New refuses files that do not
	// exist.
	EFI convert.EFIFirmware

	// MemBalloonStatsPeriod is the balloon statistics period in seconds (0:
	// off); FreePageReporting turns the balloon's free page reporting on;
	// BochsForEFIGuests gives EFI guests bochs video instead of VGA (see
	// convert.Options).
	MemBalloonStatsPeriod uint
	FreePageReporting     bool
	BochsForEFIGuests     bool

	// Logger receives the launcher's log; nil is silent.
	Logger *slog.Logger

	// KeepAliveInterval is the libvirt keepalive interval (default 5s);
	// KeepAliveCount the number of unanswered keepalives after which the
	// connection counts as lost (default 3).
	KeepAliveInterval time.Duration
	KeepAliveCount    uint

	// AgentPollInterval is how often the status of a VMI whose guest agent
	// is connected is re-read, for what the agent reports without a libvirt
	// event (addresses, guest OS). Default 10s; negative turns it off.
	AgentPollInterval time.Duration

	// ReconnectMin and ReconnectMax bound the backoff between attempts to
	// reconnect a lost connection (defaults 100ms and 5s).
	ReconnectMin, ReconnectMax time.Duration
}

// withDefaults returns cfg with its empty fields set to their defaults.
func (cfg Config) withDefaults() Config {
	if cfg.URI == "" {
		cfg.URI = DefaultURI
	}
	if cfg.Owner == "" {
		cfg.Owner, _ = os.Hostname()
	}
	if cfg.Layout.StateDir == "" {
		cfg.Layout.StateDir = convert.DefaultStateDir
	}
	if cfg.Layout.ImageStore == "" {
		cfg.Layout.ImageStore = convert.DefaultImageStore
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.KeepAliveInterval <= 0 {
		cfg.KeepAliveInterval = 5 * time.Second
	}
	if cfg.KeepAliveCount == 0 {
		cfg.KeepAliveCount = 3
	}
	if cfg.AgentPollInterval == 0 {
		cfg.AgentPollInterval = 10 * time.Second
	}
	if cfg.ReconnectMin <= 0 {
		cfg.ReconnectMin = 100 * time.Millisecond
	}
	if cfg.ReconnectMax < cfg.ReconnectMin {
		cfg.ReconnectMax = 5 * time.Second
		if cfg.ReconnectMax < cfg.ReconnectMin {
			cfg.ReconnectMax = cfg.ReconnectMin
		}
	}
	return cfg
}

// check refuses a Config the launcher could not honour: an owner it cannot
// record, folders that are not absolute, OVMF files that are not there.
func (cfg Config) check() error {
	if cfg.Owner == "" {
		return fmt.Errorf("launcher: Config.Owner is empty and the host has no name")
	}
	if err := checkAlias("Config.Owner", cfg.Owner); err != nil {
		return err
	}
	if err := checkAbsolute("Config.Layout.StateDir", cfg.Layout.StateDir); err != nil {
		return fmt.Errorf("launcher: %w", err)
	}
	if err := checkAbsolute("Config.Layout.ImageStore", cfg.Layout.ImageStore); err != nil {
		return fmt.Errorf("launcher: %w", err)
	}
	for what, path := range map[string]string{
		"Config.EFI.Code": cfg.EFI.Code, "Config.EFI.Vars": cfg.EFI.Vars,
		"Config.EFI.SecureBootCode": cfg.EFI.SecureBootCode, "Config.EFI.SecureBootVars": cfg.EFI.SecureBootVars,
	} {
		if path != "" && !fileExists(path) {
			return fmt.Errorf("launcher: %s %s does not exist", what, path)
		}
	}
	return nil
}

// checkAlias refuses a name the launcher writes into libvirt's metadata
// that is too long or holds characters beyond letters, digits, '.', '-',
// '_' and ':' (node names, host names).
func checkAlias(what, s string) error {
	if len(s) > 253 {
		return fmt.Errorf("launcher: %s %q is longer than 253 characters", what, s)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' || r == ':') {
			return fmt.Errorf("launcher: %s %q may hold only letters, digits, '.', '-', '_' and ':'", what, s)
		}
	}
	return nil
}
