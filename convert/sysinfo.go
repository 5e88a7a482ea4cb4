package convert

import "libvirt.org/go/libvirtxml"

// sysinfo writes the SMBIOS tables the guest reads (dmidecode): the system
// table holds the firmware uuid and serial of the VMI and the host's
// strings from Options.SMBIOS; the chassis table holds
// spec.domain.chassis. The <os> area points the guest at these tables
// (<smbios mode="sysinfo"/>).
//
// Entries without a value are left out: KubeVirt writes them empty (and
// empty <bios>, <baseBoard> and <chassis> elements besides), which libvirt
// reads as absent or, for the empty elements, refuses.
func (c *converter) sysinfo(d *libvirtxml.Domain) error {
	p := c.parts
	system := p.systemEntries[:0]
	if fw := c.spec.Domain.Firmware; fw != nil {
		system = appendEntries(system,
			"uuid", string(fw.UUID),
			"serial", fw.Serial,
		)
	}
	s := c.opts.SMBIOS
	system = appendEntries(system,
		"manufacturer", s.Manufacturer,
		"family", s.Family,
		"product", s.Product,
		"sku", s.SKU,
		"version", s.Version,
	)
	if len(system) > 0 {
		p.system.Entry = system
		p.smbios.System = &p.system
	}
	if ch := c.spec.Domain.Chassis; ch != nil {
		entries := appendEntries(nil,
			"manufacturer", ch.Manufacturer,
			"version", ch.Version,
			"serial", ch.Serial,
			"asset", ch.Asset,
			"sku", ch.Sku,
		)
		if len(entries) > 0 {
			p.smbios.Chassis = &libvirtxml.DomainSysInfoChassis{Entry: entries}
		}
	}
	p.sysInfo[0].SMBIOS = &p.smbios
	d.SysInfo = p.sysInfo[:]
	return nil
}

// appendEntries appends an entry for each name and value pair whose value
// is not empty.
func appendEntries(entries []libvirtxml.DomainSysInfoEntry, pairs ...string) []libvirtxml.DomainSysInfoEntry {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			entries = append(entries, libvirtxml.DomainSysInfoEntry{Name: pairs[i], Value: pairs[i+1]})
		}
	}
	return entries
}
