package convert

import "libvirt.org/go/libvirtxml"

// tpm adds an emulated TPM 2.0 when spec.domain.devices.tpm is set and not
// disabled: tpm-tis, or tpm-crb with persistent state when
// spec.domain.devices.tpm.persistent is true (as KubeVirt pairs them). A
// host that cannot emulate one (LackTPMEmulator) refuses it.
func (c *converter) tpm(d *libvirtxml.Domain) error {
	t := c.spec.Domain.Devices.TPM
	if t == nil || switchedOff(t.Enabled) {
		return nil
	}
	if !c.opts.HostFacts.Has(LackTPMEmulator) {
		return refuseLack(devicesPath.Child("tpm"), LackTPMEmulator)
	}
	dev := libvirtxml.DomainTPM{
		Model: "tpm-tis",
		Backend: &libvirtxml.DomainTPMBackend{
			Emulator: &libvirtxml.DomainTPMBackendEmulator{Version: "2.0"},
		},
	}
	if switchedOn(t.Persistent) {
		dev.Model = "tpm-crb"
		dev.Backend.Emulator.PersistentState = "yes"
	}
	d.Devices.TPMs = append(d.Devices.TPMs, dev)
	return nil
}
