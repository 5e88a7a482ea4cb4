package launcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
	"github.com/vmi2libvirt/vmi2libvirt/internal/hostfiles"
)

// hostFacts are what the launcher probes of the host once per connection.
type hostFacts struct {
	// libVersion is libvirt's version, major*1e6 + minor*1e3 + release.
	libVersion uint32
	// kvm tells whether libvirt can run KVM domains.
	kvm bool
	// efi are the OVMF files found, zero when none.
	efi convert.EFIFirmware
	// memoryHotplug tells whether libvirt defines a domain with
	// <maxMemory> and no memory slots (virtio-mem hotplug, as KubeVirt
	// writes it); Debian 12's libvirt 9.0 does not.
	memoryHotplug bool
	// qemu is the user QEMU runs as (Config.Sources.QEMUUser), nil when
	// ownership is left alone.
	qemu *hostplan.User
	// slowest is the longest a capabilities query took while probing.
	slowest time.Duration
}

// hostFacts returns the host facts of the current connection, probing them
// on first use.
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
		if f, err = probe(c); err != nil {
			return err
		}
		if f.qemu, err = hostfiles.QEMUUser(l.cfg.Sources.QEMUUser); err != nil {
			return &HostError{Err: err}
		}
		l.facts = &f
		return nil
	})
	if err == nil && !cached {
		l.log.Info("host probed", "libvirt", f.libVersion, "kvm", f.kvm, "ovmf", f.efi.Code, "memory hotplug", f.memoryHotplug, "took", time.Since(began))
		l.checkHostHealth(f)
	}
	return f, err
}

// probe asks libvirt for the host facts.
func probe(c *libvirt.Connect) (hostFacts, error) {
	var f hostFacts
	v, err := c.GetLibVersion()
	if err != nil {
		return f, wrapErr(err, "read libvirt version")
	}
	f.libVersion = v
	virtType := "qemu"
	timed := func(call func()) {
		began := time.Now()
		call()
		f.slowest = max(f.slowest, time.Since(began))
	}
	var kvmErr error
	timed(func() { _, kvmErr = c.GetDomainCapabilities("", "x86_64", "", "kvm", 0) })
	if kvmErr == nil {
		f.kvm, virtType = true, "kvm"
	}
	var loaders []string
	var raw string
	var capsErr error
	timed(func() { raw, capsErr = c.GetDomainCapabilities("", "x86_64", "q35", virtType, 0) })
	if capsErr == nil {
		caps := &libvirtxml.DomainCaps{}
		if caps.Unmarshal(raw) == nil && caps.OS != nil && caps.OS.Loader != nil {
			loaders = caps.OS.Loader.Values
		}
	}
	f.efi = hostfiles.FindEFI(loaders)
	f.memoryHotplug = probeMemoryHotplug(c)
	return f, nil
}

// probeMemoryHotplug tells whether libvirt defines a domain with a
// <maxMemory> without memory slots, as KubeVirt writes memory hotplug
// through virtio-mem: it defines a throwaway domain so, and undefines it.
func probeMemoryHotplug(c *libvirt.Connect) bool {
	var id [6]byte
	_, _ = rand.Read(id[:])
	name := "vmi2libvirt-probe-" + hex.EncodeToString(id[:])
	xml := `<domain type="qemu"><name>` + name + `</name>` +
		`<maxMemory slots="0" unit="MiB">256</maxMemory><memory unit="MiB">64</memory>` +
		`<os><type arch="x86_64" machine="q35">hvm</type></os></domain>`
	dom, err := c.DomainDefineXMLFlags(xml, libvirt.DOMAIN_DEFINE_VALIDATE)
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
	if !f.memoryHotplug && opts.HostFacts.Has(convert.LackSlotlessMaxMemory) {
		opts.HostFacts.Lacks = append(opts.HostFacts.Lacks[:len(opts.HostFacts.Lacks):len(opts.HostFacts.Lacks)], convert.LackSlotlessMaxMemory)
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
