package launcher

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
	"github.com/vmi2libvirt/vmi2libvirt/imagestore"
	"github.com/vmi2libvirt/vmi2libvirt/internal/hostfiles"
)

// DefaultURI is the libvirt connection of a Config without URI.
const DefaultURI = "qemu:///system"

// Config says how a Launcher reaches libvirt, who it is, and how it places
// and converts VMIs. The zero value is usable: qemu:///system, the host's
// name as owner, the default folders, KVM, KubeVirt's cluster defaults, no
// logging.
type Config struct {
	// URI of the libvirt connection; DefaultURI when empty.
	URI string

	// Owner names this launcher, for example after its node. Every domain
	// it defines records its owner; a launcher lists, adopts and changes
	// only the domains it owns, so launchers with different owners can
	// share one libvirtd. Empty: the host's name.
	Owner string

	// Layout places each VMI on the host. An empty StateDir is
	// convert.DefaultStateDir, an empty ImageStore convert.DefaultImageStore
	// (the image store the launcher pulls into).
	Layout convert.HostLayout

	// ClaimsOf, when set, gives the claims of each VMI at each plan: the
	// host disks behind the persistentVolumeClaim and dataVolume names its
	// volumes use (see convert.HostLayout.Claims), in place of
	// Layout.Claims, which must then be empty. Claims are namespaced: a
	// node agent maps them per namespace with it, so that a VMI reaches
	// only its own namespace's.
	ClaimsOf func(vmi *v1.VirtualMachineInstance) map[string]convert.DiskSource

	// Options are the converter's options: SMBIOS strings (empty:
	// KubeVirt's, "KubeVirt" and "None"), the OVMF files (empty: the first
	// set found on the host, Debian's then Fedora's; New refuses files
	// that do not exist), the host CPUs dedicated vCPUs are pinned to, the
	// host devices behind GPUs and host devices, balloon statistics, free
	// page reporting, bochs video for EFI guests. What describes the host
	// is the launcher's to set, from what it probes: Options.Layout and
	// Options.DomainType must be empty (Layout, Emulate), and the launcher
	// turns on what every plain host needs — a serial console log
	// (SerialConsoleLog), explicit hugepage sizes (HugepageSize) — and
	// sets Options.HostFacts from what it reads of libvirt (hostcaps.Facts),
	// unless Options.HostFacts is set: then those facts are the host's (a
	// test's override; production leaves it zero).
	Options convert.Options

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
	// credentials, size limit, progress reports). The store is the
	// folder Layout.ImageStore: Images.Root must be empty or that folder.
	// Progress, when nil, goes to Logger.
	Images imagestore.Config

	// ImagePullSecrets maps the name of an imagePullSecret (a
	// containerDisk's or kernel-boot container's) to its credentials.
	// Secrets live in a cluster: a VMI naming one not mapped here is
	// refused with the field's path.
	ImagePullSecrets map[string]authn.Authenticator

	// Logger receives the launcher's log; nil is silent.
	Logger *slog.Logger

	// KeepAliveInterval, when positive, turns libvirt's client keepalive
	// on: a connection whose daemon leaves KeepAliveCount (default 3)
	// keepalives of that interval unanswered is closed, and the launcher
	// reconnects. Off by default, as in libvirt and KubeVirt: a daemon that
	// does not answer makes calls wait until it does (their contexts
	// bound the caller's wait), and one that goes away closes the socket.
	// libvirt 9.0's client can crash the process (SIGSEGV in
	// g_main_loop_quit) when a keepalive closes a connection while calls
	// of several goroutines are in flight on it, which a launcher serving
	// a node's workers makes: turn it on only with one caller at a time.
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

// ConfigSources names the local folders that back configMap, secret,
// serviceAccount and cloud-init secretRef volumes: each key is the
// configMap, secret or service account name, each value a folder whose
// regular files become the volume's files (names starting with ".." are
// skipped, as in the folders kubelet writes; symbolic links are followed
// only when they stay inside the folder).
//
// Secrets also back cloud-init's secretRef and networkDataSecretRef (keys
// "userdata"/"userData" and "networkdata"/"networkData") and the SSH keys
// of spec.accessCredentials propagated by noCloud or configDrive.
type ConfigSources struct {
	ConfigMaps map[string]string
	Secrets    map[string]string
	// ServiceAccounts maps a service account name to its token folder.
	ServiceAccounts map[string]string

	// QEMUUser is the "user[:group]" QEMU runs as; the VMI's state folder
	// is given to it so that QEMU can create its sockets there. Empty: the
	// user and group set in /etc/libvirt/qemu.conf, else "libvirt-qemu"
	// (Debian) or "qemu" when such a user exists. "-" leaves ownership
	// alone (qemu:///session, where QEMU runs as the caller). Ignored when
	// the launcher does not run as root.
	QEMUUser string
}

// folders returns the sources' folders by kind, as package hostfiles
// reads them.
func (s ConfigSources) folders() hostfiles.Folders {
	return hostfiles.Folders{
		hostplan.ConfigMap:      s.ConfigMaps,
		hostplan.Secret:         s.Secrets,
		hostplan.ServiceAccount: s.ServiceAccounts,
	}
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
	if cfg.KeepAliveInterval > 0 && cfg.KeepAliveCount == 0 {
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
	if err := hostplan.CheckFolder("Config.Layout.StateDir", cfg.Layout.StateDir); err != nil {
		return fmt.Errorf("launcher: %w", err)
	}
	if err := hostplan.CheckFolder("Config.Layout.ImageStore", cfg.Layout.ImageStore); err != nil {
		return fmt.Errorf("launcher: %w", err)
	}
	switch {
	case cfg.Options.Layout != nil:
		return fmt.Errorf("launcher: Config.Options.Layout is set: the launcher places VMIs with Config.Layout")
	case cfg.ClaimsOf != nil && len(cfg.Layout.Claims) > 0:
		return fmt.Errorf("launcher: Config.ClaimsOf and Config.Layout.Claims are both set: give each VMI's claims one way")
	case cfg.Options.DomainType != "":
		return fmt.Errorf("launcher: Config.Options.DomainType is set: the launcher chooses it (kvm, or qemu with Config.Emulate)")
	case cfg.Images.Root != "" && filepath.Clean(cfg.Images.Root) != filepath.Clean(cfg.Layout.ImageStore):
		return fmt.Errorf("launcher: Config.Images.Root %s is not Config.Layout.ImageStore %s: the image store is one folder", cfg.Images.Root, cfg.Layout.ImageStore)
	}
	efi := cfg.Options.EFI
	for what, path := range map[string]string{
		"Config.Options.EFI.Code": efi.Code, "Config.Options.EFI.Vars": efi.Vars,
		"Config.Options.EFI.SecureBootCode": efi.SecureBootCode, "Config.Options.EFI.SecureBootVars": efi.SecureBootVars,
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
