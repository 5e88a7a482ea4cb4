package launcher

import (
	"log/slog"
	"time"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// Defaults of Config.
const (
	DefaultURI        = "qemu:///system"
	DefaultStateDir   = "/var/lib/vmi2libvirt/vmis"
	DefaultImageStore = "/var/lib/vmi2libvirt/images"
)

// Config says how a Launcher reaches libvirt and how it places and converts
// VMIs. The zero value is usable: qemu:///system, the default folders, KVM,
// KubeVirt's cluster defaults, no logging.
type Config struct {
	// URI of the libvirt connection; DefaultURI when empty.
	URI string

	// Layout places each VMI on the host. An empty StateDir is
	// DefaultStateDir, an empty ImageStore DefaultImageStore.
	Layout convert.HostLayout

	// Emulate forces domain type "qemu" (TCG emulation) even where KVM is
	// available. Without it a host without KVM is refused.
	Emulate bool

	// Cluster holds the cluster-level choices that shape api.Default.
	Cluster api.ClusterConfig

	// Sources name the local folders behind configMap, secret and
	// serviceAccount volumes.
	Sources ConfigSources

	// Options are the converter options the embedder chooses: host devices,
	// CPU set, balloon statistics, SMBIOS strings, OVMF paths... The
	// launcher sets Layout, DomainType and NoMemoryHotplug itself, turns the
	// serial console log on (a VMI may turn it off), and fills SMBIOS and
	// EFI from the host when they are left empty.
	Options convert.Options

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
	if cfg.Layout.StateDir == "" {
		cfg.Layout.StateDir = DefaultStateDir
	}
	if cfg.Layout.ImageStore == "" {
		cfg.Layout.ImageStore = DefaultImageStore
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
