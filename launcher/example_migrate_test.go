package launcher_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

// Move a running VMI live from the system libvirtd to a second libvirt
// host on the same machine (bash .ci/node.sh up node2 prints its URI),
// printing the job's progress. (Compiled, not run: it needs libvirtd.)
func ExampleLauncher_Migrate() {
	ctx := context.Background()
	data, err := os.ReadFile("examples/vmis/vmi-tiny.yaml")
	if err != nil {
		log.Fatal(err)
	}
	vmi, err := api.Decode(data)
	if err != nil {
		log.Fatal(err)
	}
	src, err := launcher.New(ctx, launcher.Config{Owner: "node1", Emulate: true})
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	dst, err := launcher.New(ctx, launcher.Config{
		URI:   "qemu+unix:///system?socket=/var/lib/vmi2libvirt/nodes/node2/run/libvirt-sock",
		Owner: "node2", Emulate: true,
		Layout: convert.HostLayout{StateDir: "/var/lib/vmi2libvirt/vmis.node2"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer dst.Close()

	if err := src.Sync(ctx, vmi); err != nil {
		log.Fatal(err)
	}
	state, err := src.Migrate(ctx, vmi, dst, launcher.MigrateOptions{Progress: func(p launcher.MigrationProgress) {
		fmt.Printf("%s: %d of %d bytes, %d remaining\n", p.Elapsed, p.DataProcessed, p.DataTotal, p.DataRemaining)
	}})
	var failed *launcher.MigrationError
	switch {
	case errors.As(err, &failed):
		log.Fatalf("still on %s: %v", failed.State.SourceNode, failed.Err)
	case err != nil:
		log.Fatal(err)
	}
	fmt.Println("now on", state.TargetNode)
}

// A process that began a migration was killed while libvirt's job ran
// (libvirtd drives it on): its successor, with the same owner, finishes it
// by the migration's UID, waiting for the job and finding where the guest
// ended up. (Compiled, not run: it needs libvirtd.)
func ExampleLauncher_SettleMigration() {
	ctx := context.Background()
	data, err := os.ReadFile("examples/vmis/vmi-tiny.yaml")
	if err != nil {
		log.Fatal(err)
	}
	vmi, err := api.Decode(data)
	if err != nil {
		log.Fatal(err)
	}
	src, err := launcher.New(ctx, launcher.Config{Owner: "node1", Emulate: true})
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	dst, err := launcher.New(ctx, launcher.Config{
		URI:   "qemu+unix:///system?socket=/var/lib/vmi2libvirt/nodes/node2/run/libvirt-sock",
		Owner: "node2", Emulate: true,
		Layout: convert.HostLayout{StateDir: "/var/lib/vmi2libvirt/vmis.node2"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer dst.Close()

	// The UID the killed process gave MigrateOptions (a
	// VirtualMachineInstanceMigration's, on Kubernetes).
	state, err := src.SettleMigration(ctx, vmi, dst, launcher.MigrateOptions{UID: "6f1c0d1e-0000-4000-8000-000000000001"})
	var failed *launcher.MigrationError
	switch {
	case errors.As(err, &failed):
		fmt.Println("the migration failed; the guest runs on", failed.State.SourceNode)
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println("migrated; the guest runs on", state.TargetNode)
	}
}
