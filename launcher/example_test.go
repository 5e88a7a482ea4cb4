package launcher_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/stream"
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
	l, err := launcher.New(ctx, launcher.Config{Owner: "node01", Emulate: true})
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
			// (spec.terminationGracePeriodSeconds) to power off, then
			// the launcher destroys it.
			if err := l.Shutdown(ctx, vmi); err != nil {
				log.Fatal(err)
			}
		}
		if domain.IsFinal(ev.Status.Phase) {
			break
		}
	}
	if err := l.Delete(ctx, vmi); err != nil {
		log.Fatal(err)
	}
}

// A reconciler sorts Sync's errors by class, without importing libvirt:
// give up on an invalid VMI (and say why, field by field), retry later
// when the host is not ready or libvirt is away, report a conflict.
func ExampleLauncher_Sync() {
	ctx := context.Background()
	l, err := launcher.New(ctx, launcher.Config{Owner: "node01"})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	var vmi *v1.VirtualMachineInstance // from the API server

	err = l.Sync(ctx, vmi)
	var invalid *launcher.InvalidError
	switch {
	case err == nil:
	case errors.As(err, &invalid):
		for _, fe := range invalid.Errors {
			fmt.Println("refused:", fe.Field, fe.Detail) // mark the VMI Failed; no retry
		}
	case errors.Is(err, launcher.ErrHostNotReady), errors.Is(err, launcher.ErrUnavailable):
		fmt.Println("retry later:", err) // requeue with backoff
	case errors.Is(err, launcher.ErrConflict):
		fmt.Println("not ours:", err) // another launcher's domain
	default:
		fmt.Println(err)
	}
}

// After a restart, List finds the domains this launcher owns; those whose
// VMI no longer exists are removed.
func ExampleLauncher_List() {
	ctx := context.Background()
	l, err := launcher.New(ctx, launcher.Config{Owner: "node01"})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	exists := func(namespace, name string) bool { return false } // ask the API server

	owned, err := l.List(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, vmi := range owned {
		if !exists(vmi.Namespace, vmi.Name) {
			if err := l.Delete(ctx, vmi); err != nil {
				log.Print(err)
			}
		}
	}
}

// Attach to a running VMI's serial console, type a command and read the
// answer, then detach: the VMI keeps running. (Compiled, not run.)
func ExampleLauncher_Console() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel() // closes the console too
	l, err := launcher.New(ctx, launcher.Config{Owner: "node01"})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tiny"}}

	console, err := l.Console(ctx, vmi, launcher.ConsoleOptions{})
	switch {
	case errors.Is(err, launcher.ErrConsoleBusy):
		log.Fatal("someone else is attached: ", err)
	case err != nil:
		log.Fatal(err)
	}
	defer console.Close() // detaches
	if _, err := io.WriteString(console, "uname -r\n"); err != nil {
		log.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := console.Read(buf)
	fmt.Printf("%q %v\n", buf[:n], err)
}

// Serve a VMI's VNC display on a loopback port for any VNC viewer, and as
// a WebSocket for noVNC, until ctx ends, with package stream. (Compiled,
// not run.)
func ExampleLauncher_VNC() {
	ctx := context.Background()
	l, err := launcher.New(ctx, launcher.Config{Owner: "node01"})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tiny"}}

	srv := &stream.Server{
		Open: func(ctx context.Context) (io.ReadWriteCloser, error) { return l.VNC(ctx, vmi) },
		// noVNC's page is served from localhost:6080.
		OriginPatterns: []string{"localhost:6080"},
	}
	vnc, err := net.Listen("tcp", "127.0.0.1:5900")
	if err != nil {
		log.Fatal(err)
	}
	ws, err := net.Listen("tcp", "127.0.0.1:5901")
	if err != nil {
		log.Fatal(err)
	}
	go func() { log.Print(srv.ServeWebSocket(ctx, ws)) }()
	log.Print(srv.Serve(ctx, vnc))
}
