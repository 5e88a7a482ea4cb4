package launcher_test

import (
	"context"
	"fmt"
	"log"
	"os"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

// Run one VMI under emulation, print its phases until it ends, and remove
// it. (Compiled, not run: it needs libvirtd.)
func Example() {
	ctx := context.Background()
	data, err := os.ReadFile("examples/vmis/vmi-tiny.yaml")
	if err != nil {
		log.Fatal(err)
	}
	vmi, err := api.Decode(data)
	if err != nil {
		log.Fatal(err)
	}
	l, err := launcher.New(ctx, launcher.Config{Emulate: true})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	events := l.Watch(ctx)
	if err := l.Sync(ctx, vmi); err != nil {
		log.Fatal(err)
	}
	stopping := false
	for ev := range events {
		fmt.Println(ev.Name, ev.Status.Phase, ev.Status.Reason)
		if ev.Status.Phase == v1.Running && !stopping {
			stopping = true
			// Press the power button; the guest has its grace period
			// (spec.terminationGracePeriodSeconds) to power off.
			go func() { _ = l.Stop(ctx, vmi) }()
		}
		if domain.IsFinal(ev.Status.Phase) {
			break
		}
	}
	if err := l.Delete(ctx, vmi); err != nil {
		log.Fatal(err)
	}
}
