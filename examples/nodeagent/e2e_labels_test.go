package main

import (
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostcaps"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// TestE2EHostLabels: an agent labels its Node with KubeVirt's node
// labeller's labels of its host's facts (cpu-model, cpu-feature,
// host-model-cpu, machine-type), beside its -node-labels; a second agent,
// whose facts a test-only override replaces (hostFactsEnv), offers another
// CPU model, one machine type, and KVM's Hyper-V, TSC and SEV labels. With
// -claim, a VMI whose nodeSelector asks for a CPU model runs on the one
// node that offers it, one with a machine type only this host offers runs
// here (KubeVirt's implicit requirement, nodeapi.Fits), and a VMI asking
// for a model neither offers stays unbound.
func TestE2EHostLabels(t *testing.T) {
	w := newWorld(t)
	ns := w.namespace(t, "labels")
	pool := uniqueName("pool")
	real, fake := uniqueName("node"), uniqueName("node")
	w.startNode(t, real, stateDir(t), "-claim", "-node-labels", "example.com/pool="+pool)
	began := time.Now()
	n := w.waitNode(t, real, "labelled with its host's CPU models", time.Minute, func(n *k8sv1.Node) bool {
		return len(withPrefix(n.Labels, virtv1.CPUModelLabel)) > 0 && n.Labels[virtv1.NodeSchedulable] == "true"
	})
	t.Logf("Node labelled %s after the agent watched VMIs: %d labels", time.Since(began).Round(time.Millisecond), len(n.Labels))
	models := withPrefix(n.Labels, virtv1.CPUModelLabel)
	for _, m := range models {
		if slices.Contains(hostcaps.ObsoleteCPUModels, m) {
			t.Errorf("obsolete model %s labelled", m)
		}
	}
	if n.Labels["example.com/pool"] != pool || n.Labels[virtv1.SupportedMachineTypeLabel+"q35"] != "true" ||
		len(withPrefix(n.Labels, virtv1.HostModelCPULabel)) != 1 || len(withPrefix(n.Labels, virtv1.CPUFeatureLabel)) == 0 {
		t.Errorf("Node labels %v: want the pool, machine-type q35, one host-model-cpu and cpu-feature labels", n.Labels)
	}
	model := models[0]

	const fakeModel, noModel = "vmi2libvirt-test-model", "vmi2libvirt-no-model"
	facts, err := json.Marshal(convert.HostFacts{CPUModels: []string{fakeModel}, CPUFeatures: []string{"sse2"},
		HostModel: &convert.HostModelCPU{Model: fakeModel, Vendor: "vmi2libvirt"}, MachineTypes: []string{"q35"},
		DomainType: "kvm", Hyperv: []string{"vpindex"}, TSC: &convert.TSCCounter{Frequency: 2_994_374_000, Scalable: true},
		LaunchSecurity: []string{"sev"}})
	if err != nil {
		t.Fatal(err)
	}
	w.startNodeEnv(t, []string{hostFactsEnv + "=" + string(facts)}, fake, stateDir(t), "-claim", "-node-labels", "example.com/pool="+pool)
	nf := w.waitNode(t, fake, "labelled with its faked CPU model", time.Minute, func(n *k8sv1.Node) bool {
		return n.Labels[virtv1.CPUModelLabel+fakeModel] == "true" && n.Labels[virtv1.NodeSchedulable] == "true"
	})
	if got := withPrefix(nf.Labels, virtv1.CPUModelLabel); !slices.Equal(got, []string{fakeModel}) {
		t.Errorf("the faked node's models %v, want only %s", got, fakeModel)
	}

	// This host (TCG) has no KVM-only labels; the faked KVM facts give
	// them. Its TSC labels are its capabilities' TSC counter, which
	// libvirt lists where it can read the frequency from /dev/kvm.
	for _, prefix := range []string{virtv1.HypervLabel, virtv1.SEVLabel} {
		if got := withPrefix(n.Labels, prefix); len(got) > 0 {
			t.Errorf("this TCG host's Node has %s labels %v", prefix, got)
		}
	}
	frequency, scaling := systemTSCCounter(t)
	wantTSC := map[string]string{}
	if frequency != "" {
		wantTSC = map[string]string{hostcaps.TSCFrequencyLabel: frequency, hostcaps.TSCScalableLabel: strconv.FormatBool(scaling == "yes")}
	}
	gotTSC := map[string]string{}
	for k, v := range n.Labels {
		if strings.HasPrefix(k, virtv1.CPUTimerLabel) {
			gotTSC[k] = v
		}
	}
	if !maps.Equal(gotTSC, wantTSC) {
		t.Errorf("this host's Node has the TSC labels %v, want %v (its capabilities' TSC counter)", gotTSC, wantTSC)
	}
	for _, l := range []string{virtv1.HypervLabel + "vpindex", hostcaps.TSCFrequencyLabel, virtv1.SEVLabel} {
		if nf.Labels[l] == "" {
			t.Errorf("the faked KVM node lacks %s: %v", l, nf.Labels)
		}
	}
	if nf.Labels[hostcaps.TSCFrequencyLabel] != "2994374000" || nf.Labels[hostcaps.TSCScalableLabel] != "true" {
		t.Errorf("the faked node's TSC labels %q %q", nf.Labels[hostcaps.TSCFrequencyLabel], nf.Labels[hostcaps.TSCScalableLabel])
	}
	// A machine type only this host offers (its canonical q35): KubeVirt's
	// implicit machine-type requirement sends the VMI here without a
	// selector of its own.
	var machine string
	for _, m := range withPrefix(n.Labels, virtv1.SupportedMachineTypeLabel) {
		if strings.HasPrefix(m, "pc-q35-") {
			machine = m
		}
	}
	if machine == "" {
		t.Fatalf("no pc-q35-* machine type among %v", withPrefix(n.Labels, virtv1.SupportedMachineTypeLabel))
	}
	byMachine := guestVMI(ns, "by-machine", 0, testguest.ActionIgnore)
	byMachine.Spec.NodeSelector = map[string]string{"example.com/pool": pool}
	byMachine.Spec.Domain.Machine = &virtv1.Machine{Type: machine}
	w.create(t, byMachine)

	want := map[string]string{"on-real": real, "on-fake": fake, "by-machine": real}
	for name, selected := range map[string]string{"on-real": model, "on-fake": fakeModel, "nowhere": noModel} {
		vmi := guestVMI(ns, name, 0, testguest.ActionIgnore)
		vmi.Spec.NodeSelector = map[string]string{"example.com/pool": pool, virtv1.CPUModelLabel + selected: "true"}
		w.create(t, vmi)
	}
	for name, node := range want {
		vmi := w.waitPhase(t, ns, name, virtv1.Running, 5*time.Minute)
		if got := vmi.Labels[virtv1.NodeNameLabel]; got != node {
			t.Errorf("%s runs on %s, want %s (the node whose CPU model its nodeSelector names)", name, got, node)
		}
	}
	if v := w.get(t, ns, "nowhere"); v.Labels[virtv1.NodeNameLabel] != "" {
		t.Errorf("a VMI asking for a CPU model no node offers was bound to %s", v.Labels[virtv1.NodeNameLabel])
	}
	for name := range want {
		if err := w.client.Delete(context.Background(), w.get(t, ns, name)); err != nil {
			t.Fatal(err)
		}
	}
	for name := range want {
		w.waitGone(t, ns, name, 2*time.Minute)
	}
}

// withPrefix lists the names after prefix of the labels that start with
// it, sorted.
func withPrefix(labels map[string]string, prefix string) []string {
	var out []string
	for k := range labels {
		if name, ok := strings.CutPrefix(k, prefix); ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// systemTSCCounter is the frequency and scaling of the TSC counter that
// the system libvirtd's capabilities list for the host CPU ("" when they
// list none).
func systemTSCCounter(t *testing.T) (frequency, scaling string) {
	t.Helper()
	conn, err := libvirt.NewConnect("qemu:///system")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	caps, err := conn.GetCapabilities()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<counter name='tsc' frequency='([1-9][0-9]*)'(?: scaling='(yes|no)')?`).FindStringSubmatch(caps)
	if m == nil {
		return "", ""
	}
	return m[1], m[2]
}
