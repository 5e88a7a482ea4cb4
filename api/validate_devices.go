package api

import (
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/vocab"
)

// validateDevices applies KubeVirt's rules for other devices on amd64:
// tablets on the usb or virtio bus, only the i6300esb watchdog, a known
// video type and no video when graphics are off, a known sound model and a
// named sound device, known panic device models, at most one GPU display
// with ramfb, a known IO threads policy (supplementalPool with a thread
// count). Names of inputs, the watchdog, filesystems, GPUs and host
// devices must be set, as KubeVirt's schema requires; those that become
// libvirt aliases (ua-<name>: inputs, the watchdog, the sound device, GPUs,
// host devices) must be libvirt alias names, this library's own rule. So
// are a known watchdog action and ioThreads only with the supplementalPool
// policy (KubeVirt's converter ignores it otherwise).
func validateDevices(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	d := &vmi.Spec.Domain
	devs := &d.Devices
	for i, in := range devs.Inputs {
		p := devicesPath.Child("inputs").Index(i)
		errs = append(errs, deviceName(p.Child("name"), in.Name, "an input device needs a name")...)
		if in.Bus != "" && !vocab.InputBuses.Has(string(in.Bus)) {
			errs = append(errs, field.NotSupported(p.Child("bus"), in.Bus, vocab.InputBuses))
		}
		if !vocab.InputTypes.Has(string(in.Type)) {
			errs = append(errs, field.NotSupported(p.Child("type"), in.Type, vocab.InputTypes))
		}
	}
	if w := devs.Watchdog; w != nil {
		errs = append(errs, deviceName(devicesPath.Child("watchdog", "name"), w.Name, "a watchdog needs a name")...)
		if w.Diag288 != nil {
			errs = append(errs, field.NotSupported(devicesPath.Child("watchdog", "diag288"), "diag288", []string{"i6300esb"}))
		} else if w.I6300ESB == nil {
			errs = append(errs, field.Required(devicesPath.Child("watchdog", "i6300esb"), "amd64 only has the i6300esb watchdog"))
		} else if a := string(w.I6300ESB.Action); a != "" && !vocab.WatchdogActions.Has(a) {
			errs = append(errs, field.NotSupported(devicesPath.Child("watchdog", "i6300esb", "action"), a, vocab.WatchdogActions))
		}
	}
	if v := devs.Video; v != nil {
		if !vocab.VideoTypes.Has(v.Type) {
			errs = append(errs, field.NotSupported(devicesPath.Child("video", "type"), v.Type, vocab.VideoTypes))
		}
		if isFalse(devs.AutoattachGraphicsDevice) {
			errs = append(errs, field.Invalid(devicesPath.Child("video"), v.Type,
				"a video device cannot be configured when "+devicesPath.Child("autoattachGraphicsDevice").String()+" is false"))
		}
	}
	if s := devs.Sound; s != nil {
		if s.Model != "" && !vocab.SoundModels.Has(s.Model) {
			errs = append(errs, field.NotSupported(devicesPath.Child("sound", "model"), s.Model, vocab.SoundModels))
		}
		errs = append(errs, deviceName(devicesPath.Child("sound", "name"), s.Name, "a sound device needs a name")...)
	}
	for i, pd := range devs.PanicDevices {
		if pd.Model != nil && !vocab.PanicModels.Has(string(*pd.Model)) {
			errs = append(errs, field.NotSupported(devicesPath.Child("panicDevices").Index(i).Child("model"), *pd.Model, vocab.PanicModels))
		}
	}
	ramfb := 0
	for i, g := range devs.GPUs {
		errs = append(errs, deviceName(devicesPath.Child("gpus").Index(i).Child("name"), g.Name, "a GPU needs a name")...)
		if o := g.VirtualGPUOptions; o != nil && o.Display != nil &&
			(o.Display.Enabled == nil || *o.Display.Enabled) && (o.Display.RamFB == nil || enabled(o.Display.RamFB)) {
			ramfb++
		}
	}
	if ramfb > 1 {
		errs = append(errs, field.Invalid(devicesPath.Child("gpus"), ramfb, "at most one GPU display may use ramfb"))
	}
	for i, fs := range devs.Filesystems {
		if fs.Name == "" {
			errs = append(errs, field.Required(devicesPath.Child("filesystems").Index(i).Child("name"), "a filesystem needs the name of its volume"))
		}
	}
	for i, hd := range devs.HostDevices {
		errs = append(errs, deviceName(devicesPath.Child("hostDevices").Index(i).Child("name"), hd.Name, "a host device needs a name")...)
	}
	if d.IOThreads != nil && (d.IOThreadsPolicy == nil || *d.IOThreadsPolicy != v1.IOThreadsPolicySupplementalPool) {
		errs = append(errs, field.Invalid(domainPath.Child("ioThreads"), d.IOThreads, "only used with ioThreadsPolicy supplementalPool"))
	}
	if pol := d.IOThreadsPolicy; pol != nil {
		if !vocab.IOThreadsPolicies.Has(string(*pol)) {
			errs = append(errs, field.NotSupported(domainPath.Child("ioThreadsPolicy"), *pol, vocab.IOThreadsPolicies))
		}
		if *pol == v1.IOThreadsPolicySupplementalPool &&
			(d.IOThreads == nil || d.IOThreads.SupplementalPoolThreadCount == nil || *d.IOThreads.SupplementalPoolThreadCount < 1) {
			errs = append(errs, field.Required(domainPath.Child("ioThreads", "supplementalPoolThreadCount"),
				"the supplementalPool IO threads policy needs a thread count of at least 1"))
		}
	}
	return errs
}

// validateLifecycle applies KubeVirt's lifecycle rules: the only start
// strategy is Paused (and not with a liveness probe), a known eviction
// strategy, probes with exactly one action, httpGet and tcpSocket probes
// only with the pod network; and, this library's own, a termination grace
// period that is not negative (it is how long Stop waits) and a known
// reboot policy.
func validateLifecycle(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	spec := &vmi.Spec
	if s := spec.StartStrategy; s != nil {
		switch {
		case *s != v1.StartStrategyPaused:
			errs = append(errs, field.NotSupported(specPath.Child("startStrategy"), *s, []string{string(v1.StartStrategyPaused)}))
		case spec.LivenessProbe != nil:
			errs = append(errs, field.Invalid(specPath.Child("startStrategy"), *s, "a VMI that starts paused cannot have a livenessProbe"))
		}
	}
	if e := spec.EvictionStrategy; e != nil && !vocab.EvictionStrategies.Has(string(*e)) {
		errs = append(errs, field.NotSupported(specPath.Child("evictionStrategy"), *e, vocab.EvictionStrategies))
	}
	if r := spec.Domain.RebootPolicy; r != nil {
		if _, ok := vocab.RebootPolicies.Lookup(string(*r)); !ok {
			errs = append(errs, field.NotSupported(domainPath.Child("rebootPolicy"), string(*r), rebootPolicies))
		}
	}
	for _, pr := range []struct {
		name  string
		probe *v1.Probe
	}{{"readinessProbe", spec.ReadinessProbe}, {"livenessProbe", spec.LivenessProbe}} {
		if pr.probe == nil {
			continue
		}
		n := 0
		for _, set := range []bool{pr.probe.HTTPGet != nil, pr.probe.TCPSocket != nil, pr.probe.Exec != nil, pr.probe.GuestAgentPing != nil} {
			if set {
				n++
			}
		}
		p := specPath.Child(pr.name)
		switch {
		case n > 1:
			errs = append(errs, field.Invalid(p, n, "a probe must have exactly one of httpGet, tcpSocket, exec and guestAgentPing"))
		case n == 0:
			errs = append(errs, field.Required(p, "one of httpGet, tcpSocket, exec and guestAgentPing"))
		}
	}
	podNetwork := false
	for _, n := range spec.Networks {
		podNetwork = podNetwork || n.Pod != nil
	}
	for _, pr := range []struct {
		name  string
		probe *v1.Probe
	}{{"readinessProbe", spec.ReadinessProbe}, {"livenessProbe", spec.LivenessProbe}} {
		if pr.probe == nil || podNetwork {
			continue
		}
		p := specPath.Child(pr.name)
		if pr.probe.HTTPGet != nil {
			errs = append(errs, field.Invalid(p.Child("httpGet"), "{}", "only allowed when the pod network is attached"))
		}
		if pr.probe.TCPSocket != nil {
			errs = append(errs, field.Invalid(p.Child("tcpSocket"), "{}", "only allowed when the pod network is attached"))
		}
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(specPath.Child("terminationGracePeriodSeconds"), *g, "must not be negative"))
	}
	return errs
}

// rebootPolicies are the words of vocab.RebootPolicies, for errors.
var rebootPolicies = vocab.RebootPolicies.Words()

// aliasNameSyntax is what libvirt's schema allows in a device alias
// (aliasName in domaincommon.rng).
var aliasNameSyntax = regexp.MustCompile(`^[a-zA-Z0-9_.-]+$`)

// deviceName checks the name of a device that the converter makes the
// device's alias, ua-<name>: set (required says why), and made of what an
// alias may hold.
func deviceName(p *field.Path, name, required string) field.ErrorList {
	switch {
	case name == "":
		return field.ErrorList{field.Required(p, required)}
	case !aliasNameSyntax.MatchString(name):
		return field.ErrorList{field.Invalid(p, name, "becomes the device's libvirt alias: only letters, digits, '_', '-' and '.'")}
	}
	return nil
}
