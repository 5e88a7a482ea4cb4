package pipeline

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// Host layout folders of a case with "layout: host", the same as
// examples/convert's defaults.
const (
	DefaultStateDir   = "/var/lib/vmi2libvirt/vmis"
	DefaultImageStore = "/var/lib/vmi2libvirt/images"
)

// caseOptions is the content of a test case's options file. Every field of
// convert.Options except Layout can be set under its own name (domainType,
// smbios, efi, cpuSet, memBalloonStatsPeriod, freePageReporting,
// bochsForEFIGuests, serialConsoleLog, noMemoryHotplug, hostDevices…).
type caseOptions struct {
	convert.Options
	// Layout is "kubevirt" (the default) or "host".
	Layout string `json:"layout"`
	// Host sets the fields of the HostLayout (stateDir, imageStore,
	// podNetwork, networks, claims, hostDiskAllow) when Layout is "host".
	Host *convert.HostLayout `json:"host"`
	// Cluster is the api.ClusterConfig passed to api.Default (zero value
	// when absent).
	Cluster api.ClusterConfig `json:"cluster"`
	// Create applies the rules KubeVirt applies only when a VMI is
	// created (pipeline.Config.Create).
	Create bool `json:"create"`
}

// ParseConfig reads the options file of a golden or catalogue case (YAML,
// see caseOptions) into the pipeline's Config. What it sets overrides
// convert.KubeVirtOptions() field by field and the rest keeps KubeVirt's
// value; an empty file gives KubeVirtOptions and the zero
// api.ClusterConfig. A host layout's StateDir and ImageStore default to
// DefaultStateDir and DefaultImageStore. Unknown keys are errors.
func ParseConfig(data []byte) (pipeline.Config, error) {
	o := caseOptions{Options: convert.KubeVirtOptions()}
	if err := yaml.UnmarshalStrict(data, &o); err != nil {
		return pipeline.Config{}, err
	}
	switch o.Layout {
	case "", "kubevirt":
		if o.Host != nil {
			return pipeline.Config{}, fmt.Errorf("host is set but layout is not host")
		}
		o.Options.Layout = convert.KubeVirtLayout{}
	case "host":
		h := convert.HostLayout{}
		if o.Host != nil {
			h = *o.Host
		}
		if h.StateDir == "" {
			h.StateDir = DefaultStateDir
		}
		if h.ImageStore == "" {
			h.ImageStore = DefaultImageStore
		}
		o.Options.Layout = h
	default:
		return pipeline.Config{}, fmt.Errorf("layout %q: want kubevirt or host", o.Layout)
	}
	return pipeline.Config{Cluster: o.Cluster, Options: o.Options, Create: o.Create}, nil
}

// LoadConfig is ParseConfig on the file called file; a file that does not
// exist gives the defaults (a case without options). It is the one function
// of this package that reads a file.
func LoadConfig(file string) (pipeline.Config, error) {
	data, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return pipeline.Config{}, err
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return pipeline.Config{}, fmt.Errorf("%s: %w", file, err)
	}
	return cfg, nil
}

// ParseOptions is ParseConfig, for callers that want the options and the
// cluster configuration apart.
func ParseOptions(data []byte) (convert.Options, api.ClusterConfig, error) {
	cfg, err := ParseConfig(data)
	return cfg.Options, cfg.Cluster, err
}

// LoadOptions is LoadConfig, for callers that want the options and the
// cluster configuration apart.
func LoadOptions(file string) (convert.Options, api.ClusterConfig, error) {
	cfg, err := LoadConfig(file)
	return cfg.Options, cfg.Cluster, err
}
