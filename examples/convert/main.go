// Command convert decodes, defaults, validates and converts KubeVirt VMI
// files into libvirt domain XML.
//
//	go run ./examples/convert [-layout kubevirt|host] [-o DIR] FILE...
//
// With -o it writes DIR/<file base name without .yaml>.xml; without it, it
// prints the XML to stdout. It exits 1 if any file failed, after converting
// the others; each failure is one line on stderr naming the file and the
// field path.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

func main() {
	layout := flag.String("layout", "kubevirt", "where things live on the host: kubevirt (virt-launcher's pod paths) or host (a state folder per VMI)")
	out := flag.String("o", "", "write DIR/<name>.xml for each FILE instead of printing to stdout")
	stateDir := flag.String("state-dir", convert.DefaultStateDir, "state folder root for -layout host")
	imageStore := flag.String("image-store", convert.DefaultImageStore, "image store for -layout host")
	var hostDiskAllow []string
	flag.Func("hostdisk-allow", "a folder under which hostDisk paths may live; repeat for more (none: hostDisks are refused)", func(dir string) error {
		hostDiskAllow = append(hostDiskAllow, dir)
		return nil
	})
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: convert [-layout kubevirt|host] [-o DIR] FILE...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	opts := convert.KubeVirtOptions()
	switch *layout {
	case "kubevirt":
	case "host":
		opts.Layout = convert.HostLayout{StateDir: *stateDir, ImageStore: *imageStore, HostDiskAllow: hostDiskAllow}
	default:
		fmt.Fprintf(os.Stderr, "convert: unknown -layout %q (want kubevirt or host)\n", *layout)
		os.Exit(2)
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "convert:", err)
			os.Exit(1)
		}
	}
	failed := false
	for _, file := range flag.Args() {
		xml, err := convertFile(file, opts)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %s\n", file, oneLine(err))
			failed = true
			continue
		}
		if *out == "" {
			os.Stdout.Write(xml)
			continue
		}
		name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(file), ".yaml"), ".yml")
		if err := os.WriteFile(filepath.Join(*out, name+".xml"), xml, 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %s\n", file, oneLine(err))
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// convertFile runs the whole pure pipeline on one file. Errors name the
// path of the field in the file: for a VirtualMachine, spec.template.spec.…
func convertFile(file string, opts convert.Options) ([]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	r, err := pipeline.FromDocument(data, pipeline.Config{Options: opts})
	return r.XML, err
}

// oneLine folds an error onto one line.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", " ")
}
