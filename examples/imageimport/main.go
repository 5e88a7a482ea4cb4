// Command imageimport fills an image store on a host without network:
// it imports the linux/amd64 image of an OCI image layout folder or a
// `docker save` tarball under an image reference.
//
//	go run ./examples/imageimport [-store DIR] REF SOURCE
//
// A VMI naming REF (a containerDisk's image, a kernelBoot container's
// image) then runs from the store with imagePullPolicy IfNotPresent or
// Never; REF's tag should not be latest, whose default pull policy, Always,
// asks a registry. It prints "REF DIGEST FOLDER"; on failure it prints one
// line naming the image and what went wrong, and exits 1.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/imagestore"
)

func main() {
	store := flag.String("store", convert.DefaultImageStore, "image store folder")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: imageimport [-store DIR] REF SOURCE")
		fmt.Fprintln(os.Stderr, "SOURCE is an OCI image layout folder or a docker save tarball")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	ref, source := flag.Arg(0), flag.Arg(1)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	s, err := imagestore.New(imagestore.Config{Root: *store})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	img, err := s.Import(ctx, ref, source)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(img.Reference, img.Digest, img.Dir)
}
