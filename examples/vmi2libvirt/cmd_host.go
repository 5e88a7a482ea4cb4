//go:build cgo

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

func newHostCommand() *cobra.Command {
	var (
		lf      launcherFlags
		format  string
		emulate bool
	)
	cmd := &cobra.Command{
		Use:   "host [-o text|json] [--emulate]",
		Short: "Print what this host's libvirt and QEMU can give a domain",
		Long: `Print the host facts the launcher plans with, as it reads them from libvirt:
its capabilities, its domain capabilities for q35 and the domain type it uses
(kvm, or qemu with --emulate or without KVM), QEMU's firmware descriptors, which
probe domains libvirt refuses and which of swtpm and passt are installed.

A VMI asking for a CPU model, machine type or feature the host lacks is refused
with its field path before anything is written. -o json prints
convert.HostFacts as JSON.`,
		Example: `  vmi2libvirt host
  vmi2libvirt host -o json | jq -r '.CPUModels[]'`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != formatText && format != formatJSON {
				return usageErrorf("-o %q: want %s or %s", format, formatText, formatJSON)
			}
			return lf.run(cmd, emulate, func(ctx context.Context, l *launcher.Launcher) error {
				facts, err := l.HostFacts(ctx)
				if err != nil {
					return launcherError(err)
				}
				if format == formatJSON {
					enc := json.NewEncoder(cmd.OutOrStdout())
					enc.SetIndent("", "  ")
					return enc.Encode(facts)
				}
				printFacts(cmd.OutOrStdout(), facts)
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", formatText, "text or json")
	cmd.Flags().BoolVar(&emulate, "emulate", false, "read the domain capabilities of emulation (domain type qemu)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{formatText, formatJSON}, cobra.ShellCompDirectiveNoFileComp))
	lf.register(cmd)
	return cmd
}

// printFacts writes the facts as lines of "what: values".
func printFacts(w io.Writer, f convert.HostFacts) {
	line := func(what string, values ...string) {
		fmt.Fprintf(w, "%-14s %s\n", what+":", strings.Join(values, " "))
	}
	line("libvirt", versionString(f.Libvirt))
	line("qemu", versionString(f.QEMU))
	line("domain", f.Arch, f.DomainType, f.Machine)
	line("machine types", f.MachineTypes...)
	line("cpu models", f.CPUModels...)
	if hm := f.HostModel; hm != nil {
		values := []string{hm.Model, hm.Vendor}
		for _, feat := range hm.Features {
			values = append(values, "+"+feat)
		}
		for _, feat := range hm.Disabled {
			values = append(values, "-"+feat)
		}
		line("host-model", values...)
	}
	if f.CPUFeatures != nil {
		line("cpu features", f.CPUFeatures...)
	}
	for _, fw := range f.Firmware {
		values := []string{fw.Code}
		if fw.Vars != "" {
			values = append(values, "vars="+fw.Vars)
		}
		for _, flag := range []struct {
			on   bool
			name string
		}{{fw.SecureBoot, "secure-boot"}, {fw.EnrolledKeys, "enrolled-keys"}, {fw.RequiresSMM, "requires-smm"}, {fw.AMDSEV, "amd-sev"}} {
			if flag.on {
				values = append(values, flag.name)
			}
		}
		line("firmware", values...)
	}
	for _, cell := range f.NUMA {
		cpus := make([]string, len(cell.CPUs))
		for i, c := range cell.CPUs {
			cpus[i] = fmt.Sprint(c.ID)
		}
		line("numa cell", fmt.Sprint(cell.ID), fmt.Sprintf("%dKiB", cell.MemoryKiB), "cpus="+strings.Join(cpus, ","))
	}
	lacks := make([]string, len(f.Lacks))
	for i, l := range f.Lacks {
		lacks[i] = string(l)
	}
	line("lacks", lacks...)
}

// versionString writes libvirt's encoding of a version (major*1e6 + minor*1e3 +
// release) as major.minor.release.
func versionString(v uint32) string {
	return fmt.Sprintf("%d.%d.%d", v/1000000, v/1000%1000, v%1000)
}
