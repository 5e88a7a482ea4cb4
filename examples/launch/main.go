// Command launch runs one KubeVirt VMI on libvirt and prints each change of
// its status as one line until it ends or is interrupted.
//
//	go run ./examples/launch [-uri qemu:///system] [-emulate] [-dry-run] [-keep] [-state-dir DIR] [-v]
//	    [-console] [-vnc 127.0.0.1:PORT] [-vnc-ws 127.0.0.1:PORT [-vnc-origin HOST:PORT]...] FILE
//
// With -dry-run it prints the domain XML the launcher would define on this
// host (the launcher's Plan: the host's OVMF files, domain type, layout
// and metadata) and writes nothing; -v also lists the artifacts it would
// make.
//
// Each line starts with the phase: "phase=Scheduled", "phase=Running
// ready=True machine=pc-q35-7.2 iface=default/52:54:00:…", ... Ctrl-C (or
// SIGTERM) stops the VMI gracefully — the ACPI power button, then destroy
// after spec.terminationGracePeriodSeconds — and prints the final phase.
// When the VMI has ended, its domain and state folder are deleted (unless
// -keep). The exit status is 0 when the VMI Succeeded, 1 otherwise.
//
// With -console the terminal is attached to the VMI's serial console once
// it runs, as virsh console and virtctl console attach it: raw mode, every
// key goes to the guest (Ctrl-C too), and Ctrl-] detaches. The VMI keeps
// running after the detach: launch goes on supervising it as without
// -console — it prints the status lines held back while attached and the
// ones that follow, and Ctrl-C then stops the VMI gracefully. The console
// has one attachment at a time (launcher.Console): while another program
// holds it, launch says so and runs on without it.
//
// -vnc ADDR serves the VMI's VNC display on a TCP port, for any VNC viewer,
// and -vnc-ws ADDR as a WebSocket, for noVNC (pages of other origins than
// ADDR itself need -vnc-origin HOST:PORT). Each client gets a connection
// of its own to QEMU's VNC server, from the moment the VMI runs until it
// ends. The display has no password: ADDR must be a loopback address, and
// port 0 picks a free port; the address is printed on stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/imagestore"
	"github.com/vmi2libvirt/vmi2libvirt/internal/cmdutil"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

func main() {
	uri := flag.String("uri", launcher.DefaultURI, "libvirt connection URI")
	emulate := flag.Bool("emulate", false, "run the guest under emulation (domain type qemu) even where KVM is available")
	stateDir := flag.String("state-dir", convert.DefaultStateDir, "folder holding one state folder per VMI")
	imageStore := flag.String("image-store", convert.DefaultImageStore, "image store for containerDisks and kernel boot")
	var hostDiskAllow []string
	flag.Func("hostdisk-allow", "a folder under which hostDisk paths may live; repeat for more (none: hostDisks are refused)", func(dir string) error {
		hostDiskAllow = append(hostDiskAllow, dir)
		return nil
	})
	keep := flag.Bool("keep", false, "keep the domain and its state folder after the VMI ended")
	dryRun := flag.Bool("dry-run", false, "print the domain XML the launcher would define on this host, and write nothing")
	owner := flag.String("owner", "", "the launcher's owner name recorded in its domains (default: the host's name)")
	verbose := flag.Bool("v", false, "log each of the launcher's steps to stderr, with its time (warnings are always printed)")
	var opts runOptions
	flag.BoolVar(&opts.console, "console", false, "attach the terminal to the VMI's serial console once it runs; Ctrl-] detaches, the VMI keeps running")
	flag.StringVar(&opts.vnc.tcp, "vnc", "", "serve the VMI's VNC display on this loopback `host:port` (port 0: any free one)")
	flag.StringVar(&opts.vnc.ws, "vnc-ws", "", "serve the VMI's VNC display as a WebSocket (noVNC) on this loopback `host:port`")
	flag.Func("vnc-origin", "a web origin `host:port` (path.Match pattern) whose pages may open the -vnc-ws WebSocket; repeat for more", func(o string) error {
		opts.vnc.origins = append(opts.vnc.origins, o)
		return nil
	})
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: launch [-uri URI] [-emulate] [-dry-run] [-state-dir DIR] [-image-store DIR] [-owner NAME] [-keep] [-v] [-console] [-vnc ADDR] [-vnc-ws ADDR [-vnc-origin HOST:PORT]...] FILE")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	cfg := launcher.Config{
		URI:     *uri,
		Owner:   *owner,
		Emulate: *emulate,
		Layout:  convert.HostLayout{StateDir: *stateDir, ImageStore: *imageStore, HostDiskAllow: hostDiskAllow},
		Logger:  cmdutil.Logger(os.Stderr, *verbose),
	}
	// A pull that lasts reports its progress on the terminal.
	cfg.Images.Progress = func(p imagestore.Progress) {
		state := "pulling"
		if p.Finished {
			state = "pulled"
		}
		fmt.Fprintf(os.Stderr, "%s %s: %.1f of %.1f MB\n", state, p.Image, float64(p.Done)/1e6, float64(p.Total)/1e6)
	}
	if *dryRun {
		os.Exit(dryRunPlan(flag.Arg(0), cfg, *verbose))
	}
	opts.keep = *keep
	os.Exit(run(flag.Arg(0), cfg, opts))
}

// runOptions are what run does beside running the VMI.
type runOptions struct {
	keep    bool // leave the ended VMI defined
	console bool // attach the terminal to the serial console
	vnc     vncFlags
}

// readVMI decodes the VMI (or VirtualMachine) in file.
func readVMI(file string) (*v1.VirtualMachineInstance, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return api.Decode(data)
}

// failure prints err, about file, on stderr and returns the exit status 1.
func failure(file string, err error) int {
	fmt.Fprintf(os.Stderr, "launch: %s: %v\n", file, err)
	return 1
}

func run(file string, cfg launcher.Config, opts runOptions) int {
	fail := func(err error) int { return failure(file, err) }
	vmi, err := readVMI(file)
	if err != nil {
		return fail(err)
	}
	namespace := vmi.Namespace
	if namespace == "" {
		namespace = "default"
	}
	interrupted, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()

	l, err := launcher.New(interrupted, cfg)
	if err != nil {
		return fail(err)
	}
	defer l.Close()

	// Print every status change; report the final phase when it comes.
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	final := make(chan v1.VirtualMachineInstancePhase, 1)
	running := make(chan struct{}) // closed once the VMI runs, or ended
	printed := make(chan struct{})
	status := &statusPrinter{}
	events := l.Watch(watchCtx) // before Sync, so that no status is missed
	go func() {
		defer close(printed)
		wasRunning := false
		for ev := range events {
			if ev.Namespace != namespace || ev.Name != vmi.Name {
				continue // another VMI this owner runs
			}
			status.print(cmdutil.StatusLine(ev.Status))
			end := domain.IsFinal(ev.Status.Phase)
			if !wasRunning && (ev.Status.Phase == v1.Running || end) {
				wasRunning = true
				close(running)
			}
			if end {
				final <- ev.Status.Phase
				return
			}
		}
	}()

	// Serve the VNC display from now until the VMI is gone.
	serving, stopServing := context.WithCancel(context.Background())
	defer stopServing()
	vncDone, err := serveVNC(serving, l, vmi, opts.vnc, cfg.Logger)
	if err != nil {
		return fail(err)
	}
	defer func() { stopServing(); <-vncDone }()

	syncErr := l.Sync(interrupted, vmi)
	if syncErr != nil && interrupted.Err() == nil {
		return fail(syncErr)
	}
	if opts.console && syncErr == nil {
		select {
		case <-running:
			if err := attachConsole(interrupted, l, vmi, status); err != nil {
				fmt.Fprintf(os.Stderr, "launch: no console: %v\n", err)
			}
		case <-interrupted.Done():
		}
	}
	var phase v1.VirtualMachineInstancePhase
	select {
	case phase = <-final:
	case <-interrupted.Done():
		stopSignals() // a second Ctrl-C kills the program
		grace := int64(v1.DefaultGracePeriodSeconds)
		if t := vmi.Spec.TerminationGracePeriodSeconds; t != nil {
			grace = *t
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(grace)*time.Second+30*time.Second)
		defer cancel()
		if err := l.Stop(ctx, vmi); err != nil {
			return fail(err)
		}
		select {
		case phase = <-final:
		case <-time.After(5 * time.Second):
			st, err := l.Status(ctx, vmi)
			if err != nil {
				return fail(err)
			}
			phase = st.Phase
			status.print(cmdutil.StatusLine(st))
		}
	}
	stopWatch()
	<-printed
	stopServing()
	<-vncDone
	if !opts.keep {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := l.Delete(ctx, vmi); err != nil {
			return fail(err)
		}
	}
	if phase != v1.Succeeded {
		return 1
	}
	return 0
}

// dryRunPlan prints the domain the launcher would define for the VMI in
// file, and with verbose the artifacts it would make, on stderr.
func dryRunPlan(file string, cfg launcher.Config, verbose bool) int {
	fail := func(err error) int { return failure(file, err) }
	vmi, err := readVMI(file)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := launcher.New(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	defer l.Close()
	plan, err := l.Plan(ctx, vmi)
	if err != nil {
		return fail(err)
	}
	os.Stdout.Write(plan.XML)
	if verbose {
		for _, a := range plan.Artifacts {
			fmt.Fprintln(os.Stderr, "artifact:", a)
		}
	}
	return 0
}

// statusPrinter prints status lines, each once, on stdout; while the
// terminal is attached to the console it holds them back, and prints the
// last one held when released.
type statusPrinter struct {
	mu      sync.Mutex
	held    bool
	last    string // last line printed
	pending string // last line held back
}

func (p *statusPrinter) print(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held {
		p.pending = line
		return
	}
	if line != p.last {
		fmt.Println(line)
		p.last = line
	}
}

func (p *statusPrinter) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = true
}

func (p *statusPrinter) release() {
	p.mu.Lock()
	p.held = false
	line := p.pending
	p.pending = ""
	p.mu.Unlock()
	if line != "" {
		p.print(line)
	}
}
