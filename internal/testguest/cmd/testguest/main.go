// Command testguest builds the end-to-end test guest (Debian's cloud kernel
// and a busybox initramfs) into an image store:
//
//	go run ./internal/testguest/cmd/testguest [-store DIR] [-kernel DIR] [-busybox FILE]
//
// It prints the image reference and the paths of the kernel and initrd.
package main

import (
	"flag"
	"fmt"
	"os"
	"path"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/internal/testguest"
)

func main() {
	store := flag.String("store", testguest.DefaultImageStore, "image store to install the guest into")
	kernel := flag.String("kernel", testguest.DefaultKernelTree, "root of the extracted linux-image package")
	busybox := flag.String("busybox", testguest.DefaultBusybox, "statically linked busybox")
	flag.Parse()
	ref, err := testguest.BuildWith(*store, testguest.Options{KernelTree: *kernel, Busybox: *busybox})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testguest:", err)
		os.Exit(1)
	}
	dir := convert.HostLayout{ImageStore: *store}.ImageFolder(ref)
	fmt.Printf("%s\nkernel %s\ninitrd %s\n", ref, path.Join(dir, testguest.KernelPath), path.Join(dir, testguest.InitrdPath))
}
