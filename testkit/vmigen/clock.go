package vmigen

import (
	v1 "kubevirt.io/api/core/v1"
)

// clock draws spec.domain.clock: an offset (utc, utc with an offset in
// seconds, a time zone, or none) and timers with their tick policies.
func (g *gen) clock() {
	if !g.p(0.3) {
		return
	}
	c := &v1.Clock{}
	switch pickW(g, weighted[string]{3, "utc"}, weighted[string]{2, "offset"}, weighted[string]{2, "timezone"}, weighted[string]{1, ""}) {
	case "utc":
		c.UTC = &v1.ClockOffsetUTC{}
	case "offset":
		c.UTC = &v1.ClockOffsetUTC{OffsetSeconds: ptr(pick(g, -3600, 60, 7200))}
	case "timezone":
		c.Timezone = ptr(v1.ClockOffsetTimezone(pick(g, "Europe/Berlin", "America/New_York", "Asia/Tokyo", "UTC")))
	}
	if g.p(0.6) {
		t := &v1.Timer{}
		present := func() *bool {
			if g.p(0.3) {
				return ptr(g.p(0.6))
			}
			return nil
		}
		if g.p(0.5) {
			t.RTC = &v1.RTCTimer{
				TickPolicy: pick(g, "", v1.RTCTickPolicyDelay, v1.RTCTickPolicyCatchup),
				Track:      pick(g, "", v1.TrackGuest, v1.TrackWall),
				Enabled:    present(),
			}
		}
		if g.p(0.4) {
			t.PIT = &v1.PITTimer{TickPolicy: pick(g, "", v1.PITTickPolicyDelay, v1.PITTickPolicyCatchup, v1.PITTickPolicyDiscard), Enabled: present()}
		}
		if g.p(0.3) {
			t.KVM = &v1.KVMTimer{Enabled: present()}
		}
		if g.p(0.4) {
			t.HPET = &v1.HPETTimer{Enabled: present()}
			if g.p(0.3) {
				t.HPET.TickPolicy = pick(g, v1.HPETTickPolicyDelay, v1.HPETTickPolicyCatchup, v1.HPETTickPolicyMerge, v1.HPETTickPolicyDiscard)
			}
		}
		if g.p(0.3) {
			t.Hyperv = &v1.HypervTimer{Enabled: present()}
		}
		c.Timer = t
	}
	g.spec.Domain.Clock = c
}
