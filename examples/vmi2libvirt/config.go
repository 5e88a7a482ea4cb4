package main

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/internal/fixtures"
	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// Layouts --layout names.
const (
	layoutKubeVirt = "kubevirt"
	layoutHost     = "host"
)

// hostFlags place VMIs on a plain libvirt host (convert.HostLayout).
type hostFlags struct {
	stateDir, imageStore string
	hostDiskAllow        []string
}

// hostFlagNames are the flags of hostFlags.
var hostFlagNames = []string{"state-dir", "image-store", "hostdisk-allow"}

func (h *hostFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&h.stateDir, "state-dir", convert.DefaultStateDir, "folder holding one state folder per VMI (overlays, cloud-init ISOs, sockets, logs)")
	fs.StringVar(&h.imageStore, "image-store", convert.DefaultImageStore, "image store of containerDisk and kernel-boot images")
	fs.StringArrayVar(&h.hostDiskAllow, "hostdisk-allow", nil, "a folder hostDisk paths may lie under; repeat for more (none: hostDisks are refused)")
}

// layout is the host layout the flags give.
func (h *hostFlags) layout() convert.HostLayout {
	return convert.HostLayout{StateDir: h.stateDir, ImageStore: h.imageStore, HostDiskAllow: h.hostDiskAllow}
}

// conversionFlags shape a conversion without libvirt (convert, validate,
// diff): a layout and its folders, or a fixture's options file.
type conversionFlags struct {
	layout  string
	host    hostFlags
	options string
}

// register adds the flags to cmd.
func (f *conversionFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.layout, "layout", layoutKubeVirt, "where things live: kubevirt (virt-launcher's paths in its pod, to compare with KubeVirt) or host (one state folder per VMI on a plain libvirt host)")
	f.host.register(fs)
	fs.StringVar(&f.options, "options", "", "a golden fixture's options.yaml: layout, host facts and cluster settings, instead of --layout and its folders")
	_ = cmd.RegisterFlagCompletionFunc("layout", cobra.FixedCompletions([]string{layoutKubeVirt, layoutHost}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagFilename("options", "yaml", "yml")
	for _, name := range append([]string{"layout"}, hostFlagNames...) {
		cmd.MarkFlagsMutuallyExclusive("options", name)
	}
}

// config is the pipeline's configuration the flags give. A host folder
// set with the kubevirt layout is refused: nothing would read it.
func (f *conversionFlags) config(fs *pflag.FlagSet) (pipeline.Config, error) {
	if f.options != "" {
		data, err := os.ReadFile(f.options)
		if err != nil {
			return pipeline.Config{}, fileError(err)
		}
		cfg, err := fixtures.ParseConfig(data)
		if err != nil {
			return pipeline.Config{}, usageErrorf("--options %s: %v", f.options, err)
		}
		return cfg, nil
	}
	opts := convert.KubeVirtOptions()
	switch f.layout {
	case layoutKubeVirt:
		for _, name := range hostFlagNames {
			if fs.Changed(name) {
				return pipeline.Config{}, usageErrorf("--%s places VMIs on a host: it needs --layout host", name)
			}
		}
	case layoutHost:
		opts.Layout = f.host.layout()
	default:
		return pipeline.Config{}, usageErrorf("--layout %q: want %s or %s", f.layout, layoutKubeVirt, layoutHost)
	}
	return pipeline.Config{Options: opts}, nil
}
