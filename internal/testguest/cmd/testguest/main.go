// Command testguest builds the end-to-end test guest (Debian's cloud kernel
// and a busybox initramfs) as an OCI image and imports it into an image
// store, as an air-gapped host imports an image:
//
//	go run ./internal/testguest/cmd/testguest [-store DIR] [-kernel DIR] [-busybox FILE]
//
// It prints the image reference, its digest and the host paths of the
// kernel and initrd.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/vmi2libvirt/vmi2libvirt/internal/testguest"
)

func main() {
	store := flag.String("store", testguest.DefaultImageStore, "image store to import the guest into")
	kernel := flag.String("kernel", testguest.DefaultKernelTree, "root of the extracted linux-image package")
	busybox := flag.String("busybox", testguest.DefaultBusybox, "statically linked busybox")
	flag.Parse()
	img, err := testguest.Install(*store, testguest.Options{KernelTree: *kernel, Busybox: *busybox})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testguest:", err)
		os.Exit(1)
	}
	fmt.Println(testguest.Ref, img.Digest)
	for _, p := range []string{testguest.KernelPath, testguest.InitrdPath} {
		host, err := img.HostPath(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testguest:", err)
			os.Exit(1)
		}
		fmt.Println(p, host)
	}
}
