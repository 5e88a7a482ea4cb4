package launcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"time"

	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostcaps"
	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
	"github.com/vmi2libvirt/vmi2libvirt/internal/hostfiles"
)

// hostFacts are what the launcher probes of the host once per connection.
type hostFacts struct {
	// facts are what libvirt and QEMU can give a domain, read from the
	// documents by hostcaps.Facts.
	facts convert.HostFacts
	// kvm tells whether libvirt can run KVM domains.
	kvm bool
	// efi are the OVMF builds of QEMU's firmware descriptors
	// (hostcaps.EFI), or without descriptors the files found; zero when
	// none.
	efi convert.EFIFirmware
	// qemu is the user QEMU runs as (Config.Sources.QEMUUser), nil when
	// ownership is left alone.
	qemu *hostplan.User
	// slowest is the longest a capabilities query took while probing.
	slowest time.Duration
}

// HostFacts returns what this host's libvirt and QEMU can give a domain,
// as the launcher read them on its current connection (the facts its plans
// are made with, unless Config.Options.HostFacts overrides them): machine
// types, CPU models, the host-model CPU, firmware, NUMA topology and the
// forms of KubeVirt's domain the host lacks.
func (l *Launcher) HostFacts(ctx context.Context) (convert.HostFacts, error) {
	f, err := l.hostFacts(ctx)
	return f.facts, err
}

// hostFacts returns the host facts of the current connection, probing them
// on first use (again after a reconnect).
func (l *Launcher) hostFacts(ctx context.Context) (hostFacts, error) {
	l.factsMu.Lock()
	defer l.factsMu.Unlock()
	var f hostFacts
	var cached bool
	began := time.Now()
	err := l.do(ctx, func(c *libvirt.Connect) error {
		if l.facts != nil {
			f, cached = *l.facts, true
			return nil
		}
		var err error
		if f, err = probe(c, l.cfg.Emulate); err != nil {
			return err
		}
		if f.qemu, err = hostfiles.QEMUUser(l.cfg.Sources.QEMUUser); err != nil {
			return &HostError{Err: err}
		}
		l.facts = &f
		return nil
	})
	if err == nil && !cached {
		l.log.Info("host probed", "libvirt", f.facts.Libvirt, "qemu", f.facts.QEMU, "kvm", f.kvm, "machine", f.facts.Machine,
			"cpu models", len(f.facts.CPUModels), "ovmf", f.efi.Code, "lacks", f.facts.Lacks, "took", time.Since(began))
		l.checkHostHealth(f)
	}
	return f, err
}

// firmwareDir holds QEMU's firmware descriptors.
const firmwareDir = "/usr/share/qemu/firmware"

// probe reads the host's documents from libvirt (its capabilities, its
// domain capabilities for q35 and the domain type the launcher uses, the
// features of its host-model CPU, which probe domains it defines), QEMU's firmware descriptors and which
// programs are installed, and turns them into facts (hostcaps.Facts).
func probe(c *libvirt.Connect, emulate bool) (hostFacts, error) {
	var f hostFacts
	var docs hostcaps.Documents
	var err error
	if docs.Libvirt, err = c.GetLibVersion(); err != nil {
		return f, wrapErr(err, "read libvirt version")
	}
	if docs.QEMU, err = c.GetVersion(); err != nil {
		return f, wrapErr(err, "read QEMU version")
	}
	timed := func(call func()) {
		began := time.Now()
		call()
		f.slowest = max(f.slowest, time.Since(began))
	}
	var kvmErr error
	timed(func() { _, kvmErr = c.GetDomainCapabilities("", "x86_64", "", "kvm", 0) })
	virtType := "qemu"
	if kvmErr == nil {
		f.kvm = true
		if !emulate {
			virtType = "kvm"
		}
	}
	var raw, capsXML string
	var capsErr error
	timed(func() { raw, capsErr = c.GetDomainCapabilities("", "x86_64", "q35", virtType, 0) })
	if capsErr != nil {
		return f, wrapErr(capsErr, "read domain capabilities")
	}
	timed(func() { capsXML, capsErr = c.GetCapabilities() })
	if capsErr != nil {
		return f, wrapErr(capsErr, "read capabilities")
	}
	docs.DomainCapabilities, docs.Capabilities = []byte(raw), []byte(capsXML)
	if docs.CPUFeatures, err = expandHostModel(c, docs.DomainCapabilities, virtType); err != nil {
		return f, err
	}
	var loaders []string
	if caps := (&libvirtxml.DomainCaps{}); caps.Unmarshal(raw) == nil && caps.OS != nil && caps.OS.Loader != nil {
		loaders = caps.OS.Loader.Values
	}
	if docs.Firmware, err = firmwareDescriptors(firmwareDir); err != nil {
		return f, &HostError{Err: err}
	}
	docs.Programs = map[string]bool{}
	for _, p := range hostcaps.Programs {
		_, err := exec.LookPath(p)
		docs.Programs[p] = err == nil
	}
	for _, p := range hostcaps.Probes {
		if !defines(c, p) {
			docs.Refused = append(docs.Refused, p.Lack)
		}
	}
	if f.facts, err = hostcaps.Facts(docs); err != nil {
		return f, &HostError{Err: err}
	}
	// QEMU's firmware descriptors say which OVMF builds boot what; a host
	// without them gets the files found.
	var described bool
	if f.efi, described = hostcaps.EFI(f.facts.Firmware, f.facts.Machine); !described {
		f.efi = hostfiles.FindEFI(loaders)
	}
	return f, nil
}

// expandHostModel asks libvirt for the features of the host-model CPU of
// domainCaps, expanded (as KubeVirt's node labeller runs virsh
// hypervisor-cpu-baseline --features); nil when there is no host-model
// CPU.
func expandHostModel(c *libvirt.Connect, domainCaps []byte, virtType string) ([]byte, error) {
	cpu, ok, err := hostcaps.HostModelCPU(domainCaps)
	if err != nil {
		return nil, &HostError{Err: err}
	}
	if !ok {
		return nil, nil
	}
	expanded, err := c.BaselineHypervisorCPU("", "x86_64", "q35", virtType, []string{cpu}, libvirt.CONNECT_BASELINE_CPU_EXPAND_FEATURES)
	if err != nil {
		return nil, wrapErr(err, "expand the host-model CPU's features")
	}
	return []byte(expanded), nil
}

// firmwareDescriptors reads the descriptors of dir in name order (none when
// dir does not exist).
func firmwareDescriptors(dir string) ([]hostcaps.Descriptor, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	out := make([]hostcaps.Descriptor, 0, len(files))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		out = append(out, hostcaps.Descriptor{Name: filepath.Base(file), JSON: b})
	}
	return out, nil
}

// defines tells whether libvirt defines the probe's throwaway domain (of
// domain type qemu, validated against its schema); it undefines it again.
func defines(c *libvirt.Connect, p hostcaps.Probe) bool {
	var id [6]byte
	_, _ = rand.Read(id[:])
	dom, err := c.DomainDefineXMLFlags(p.Domain("vmi2libvirt-probe-"+hex.EncodeToString(id[:]), "qemu"), libvirt.DOMAIN_DEFINE_VALIDATE)
	if err != nil {
		return false
	}
	_ = dom.Undefine()
	dom.Free()
	return true
}

// defaultSMBIOS are the SMBIOS strings of a domain when Config leaves them
// empty: KubeVirt's, so guests see what they would see under KubeVirt.
var defaultSMBIOS = convert.SMBIOS{Manufacturer: "KubeVirt", Product: "None", Family: "KubeVirt"}

// host returns the host a plan is made for, as described by f: Config's
// choices, and what the launcher decides from the host.
func (l *Launcher) host(f hostFacts) (hostplan.Host, error) {
	opts := l.cfg.Options
	opts.Layout = l.cfg.Layout
	opts.SerialConsoleLog = true // a VMI may turn it off
	opts.HugepageSize = true     // a plain host may mount several hugepage sizes
	if reflect.ValueOf(opts.HostFacts).IsZero() {
		opts.HostFacts = f.facts
	}
	switch {
	case l.cfg.Emulate:
		opts.DomainType = "qemu"
	case f.kvm:
		opts.DomainType = "kvm"
	default:
		return hostplan.Host{}, &HostError{Err: fmt.Errorf("KVM is not available on %s and emulation is not allowed (Config.Emulate)", l.cfg.URI)}
	}
	if opts.SMBIOS == (convert.SMBIOS{}) {
		opts.SMBIOS = defaultSMBIOS
	}
	if opts.EFI == (convert.EFIFirmware{}) {
		opts.EFI = f.efi
	}
	return hostplan.Host{Owner: l.cfg.Owner, Options: opts, Cluster: l.cfg.Cluster, QEMU: f.qemu}, nil
}
