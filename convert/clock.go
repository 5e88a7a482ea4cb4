package convert

import (
	"strconv"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// clock writes <clock> from spec.domain.clock: the offset (utc, reset at
// boot unless utc.offsetSeconds says otherwise, a timezone, or utc without
// adjustment when the VMI names none) and the
// timers rtc, pit, kvmclock, hpet and hypervclock, in KubeVirt's order,
// each present unless disabled. A VMI whose guest needs a fixed TSC
// frequency (an invtsc CPU feature, or Hyper-V re-enlightenment) gets a tsc
// timer with the frequency of status.topologyHints, as in KubeVirt.
func (c *converter) clock(d *libvirtxml.Domain) error {
	freq, tsc := c.tscFrequency()
	src := c.spec.Domain.Clock
	if src == nil && !tsc {
		return nil
	}
	parts := new(clockParts)
	clk := &parts.clock
	if src != nil {
		switch {
		case src.UTC != nil:
			clk.Offset = "utc"
			clk.Adjustment = "reset"
			if s := src.UTC.OffsetSeconds; s != nil {
				clk.Adjustment = strconv.Itoa(*s)
			}
		case src.Timezone != nil:
			clk.Offset = "timezone"
			clk.TimeZone = string(*src.Timezone)
		}
		if t := src.Timer; t != nil {
			clk.Timer = timers(parts.timers[:0], t)
		}
	}
	if clk.Offset == "" {
		// KubeVirt writes no offset then; libvirt reads that as utc (with
		// no adjustment), and its schema wants the offset written.
		clk.Offset = "utc"
	}
	if tsc {
		if clk.Timer == nil {
			clk.Timer = parts.timers[:0]
		}
		clk.Timer = append(clk.Timer, libvirtxml.DomainTimer{Name: "tsc", Frequency: uint64(freq)})
	}
	d.Clock = clk
	return nil
}

// clockParts are the <clock> element and its timers, allocated together.
type clockParts struct {
	clock  libvirtxml.DomainClock
	timers [6]libvirtxml.DomainTimer // rtc, pit, kvmclock, hpet, hypervclock, tsc
}

// timers appends to out the <timer> elements of spec.domain.clock.timer
// (nil when there are none).
func timers(out []libvirtxml.DomainTimer, t *v1.Timer) []libvirtxml.DomainTimer {
	if r := t.RTC; r != nil {
		out = append(out, libvirtxml.DomainTimer{Name: "rtc", TickPolicy: string(r.TickPolicy), Track: string(r.Track), Present: boolYesNo(optionalOn(r.Enabled))})
	}
	if p := t.PIT; p != nil {
		out = append(out, libvirtxml.DomainTimer{Name: "pit", TickPolicy: string(p.TickPolicy), Present: boolYesNo(optionalOn(p.Enabled))})
	}
	if k := t.KVM; k != nil {
		out = append(out, libvirtxml.DomainTimer{Name: "kvmclock", Present: boolYesNo(optionalOn(k.Enabled))})
	}
	if h := t.HPET; h != nil {
		out = append(out, libvirtxml.DomainTimer{Name: "hpet", TickPolicy: string(h.TickPolicy), Present: boolYesNo(optionalOn(h.Enabled))})
	}
	if h := t.Hyperv; h != nil {
		out = append(out, libvirtxml.DomainTimer{Name: "hypervclock", Present: boolYesNo(optionalOn(h.Enabled))})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// tscFrequency returns the TSC frequency (Hz) the guest must see, when it
// needs a fixed one and status.topologyHints names it.
func (c *converter) tscFrequency() (int64, bool) {
	hints := c.vmi.Status.TopologyHints
	if hints == nil || hints.TSCFrequency == nil || *hints.TSCFrequency <= 0 {
		return 0, false
	}
	needed := false
	if cpu := c.spec.Domain.CPU; cpu != nil {
		for _, f := range cpu.Features {
			if f.Name == "invtsc" && (f.Policy == "require" || f.Policy == "force") {
				needed = true
			}
		}
	}
	if f := c.spec.Domain.Features; f != nil && f.Hyperv != nil && f.Hyperv.Reenlightenment != nil {
		if e := f.Hyperv.Reenlightenment.Enabled; e != nil && *e {
			needed = true
		}
	}
	return *hints.TSCFrequency, needed
}
