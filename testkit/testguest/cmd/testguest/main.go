// Command testguest builds the end-to-end test guest (Debian's cloud kernel
// and a busybox initramfs) as an OCI image and imports it into an image
// store, as an air-gapped host imports an image; with -boot-images, also
// the bootable images (Debian's generic kernel, GRUB and signed shim) as
// containerDisk images:
//
//	go run ./internal/testguest/cmd/testguest [-store DIR] [-kernel DIR] [-busybox FILE]
//		[-boot-images [-generic-kernel DIR] [-signed-boot DIR] [-grub DIR]]
//
// It prints each image's reference and digest, and the host paths of the
// kernel-boot guest's kernel and initrd.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

func main() {
	store := flag.String("store", testguest.DefaultImageStore, "image store to import the guest into")
	kernel := flag.String("kernel", testguest.DefaultKernelTree, "root of the extracted linux-image package")
	busybox := flag.String("busybox", testguest.DefaultBusybox, "statically linked busybox")
	boot := flag.Bool("boot-images", false, "also build and import the bootable images")
	generic := flag.String("generic-kernel", testguest.DefaultGenericKernelTree, "root of the extracted generic (signed) linux-image package, for -boot-images")
	signed := flag.String("signed-boot", testguest.DefaultSignedBootTree, "root of the extracted shim-signed and grub-efi-amd64-signed, for -boot-images")
	grub := flag.String("grub", testguest.DefaultGrubLib, "GRUB's folder of platforms, for -boot-images")
	flag.Parse()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "testguest:", err)
		os.Exit(1)
	}
	img, err := testguest.Install(*store, testguest.Options{KernelTree: *kernel, Busybox: *busybox})
	if err != nil {
		fail(err)
	}
	fmt.Println(testguest.Ref, img.Digest)
	for _, p := range []string{testguest.KernelPath, testguest.InitrdPath} {
		host, err := img.HostPath(p)
		if err != nil {
			fail(err)
		}
		fmt.Println(p, host)
	}
	if !*boot {
		return
	}
	images, err := testguest.InstallBootImages(*store, testguest.BootOptions{KernelTree: *generic, SignedBootTree: *signed, GrubLib: *grub, Busybox: *busybox})
	if err != nil {
		fail(err)
	}
	for _, img := range images {
		fmt.Println(img.Reference, img.Digest)
	}
}
