// Command vmigen writes generated VirtualMachineInstances (package
// testkit/vmigen) to a folder as YAML, one file per VMI, named after it:
//
//	go run ./testkit/vmigen/cmd/vmigen -seed 1 -n 2000 -profile kubevirt -o DIR
//
// -profile supported (the default) draws only what the project converts
// today, kubevirt also what KubeVirt admits and the project refuses;
// -layout kubevirt (the default) draws VMIs for KubeVirt's pod layout, as
// examples/convert -layout kubevirt and kvdiff convert them (the host
// layout's VMIs name claims, networks and host devices that only the
// Options of their vmigen.Case map). -start skips the first VMIs of the
// sequence. It prints how many files it wrote.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/vmigen"
)

func main() {
	seed := flag.Uint64("seed", 1, "seed of the sequence")
	n := flag.Int("n", 100, "how many VMIs to write")
	start := flag.Int("start", 0, "index of the first VMI")
	profile := flag.String("profile", "supported", "vocabulary: supported or kubevirt")
	layout := flag.String("layout", "kubevirt", "layout the VMIs are made for: kubevirt or host")
	out := flag.String("o", "", "folder to write the VMIs to (made if missing)")
	flag.Parse()
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "vmigen: "+format+"\n", args...)
		os.Exit(2)
	}
	if *out == "" || flag.NArg() > 0 {
		fail("usage: vmigen [-seed N] [-n N] [-start N] [-profile supported|kubevirt] [-layout kubevirt|host] -o DIR")
	}
	cfg := vmigen.Config{Seed: *seed}
	var ok bool
	if cfg.Profile, ok = named(*profile, vmigen.Supported, vmigen.KubeVirt); !ok {
		fail("-profile %q: want supported or kubevirt", *profile)
	}
	if cfg.Layout, ok = named(*layout, vmigen.KubeVirtLayout, vmigen.HostLayout); !ok {
		fail("-layout %q: want kubevirt or host", *layout)
	}
	if *n < 0 || *start < 0 {
		fail("-n and -start must not be negative")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "vmigen:", err)
		os.Exit(1)
	}
	for i := *start; i < *start+*n; i++ {
		c := vmigen.Generate(cfg, i)
		data, err := vmigen.YAML(c.VMI)
		if err == nil {
			err = os.WriteFile(filepath.Join(*out, c.VMI.Name+".yaml"), data, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "vmigen:", err)
			os.Exit(1)
		}
	}
	fmt.Printf("vmigen: wrote %d VMIs (seed %d, profile %s, layout %s) to %s\n", *n, *seed, cfg.Profile, cfg.Layout, *out)
}

// named returns the choice whose String is name.
func named[T fmt.Stringer](name string, choices ...T) (T, bool) {
	for _, c := range choices {
		if c.String() == name {
			return c, true
		}
	}
	var zero T
	return zero, false
}
