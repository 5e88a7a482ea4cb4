package launcher_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
)

// realtimeVMI is a realtime VMI whose mask names vCPU 1 of its two, with
// the host's NUMA cells passed through and 2Mi hugepages.
const realtimeVMI = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: %s
  namespace: ` + testNamespace + `
spec:
  domain:
    cpu:
      cores: 2
      dedicatedCpuPlacement: true
      realtime:
        mask: "1"
      numa:
        guestMappingPassthrough: {}
    memory:
      guest: 64Mi
      hugepages:
        pageSize: 2Mi
    devices:
      autoattachGraphicsDevice: false
      autoattachSerialConsole: false
`

// realtimePages are the 2Mi hugepages realtimeVMI's guest takes.
const realtimePages = 32

// TestE2ERealtime plans a realtime VMI with this host's facts (its NUMA
// cells among them) and the host CPUs 0 and 1, defines its domain on the
// real libvirtd, starts it paused under emulation and reads the vCPU
// threads' scheduling from /proc: the vCPU the mask names (1) is
// SCHED_FIFO at priority 1, as KubeVirt's virt-handler makes it, the
// other (0) is not. It reserves the guest's hugepages for the test when
// the host has too few free, and makes the host a realtime one as
// KubeVirt's node labeller wants it (unlimitRealtime), giving both back
// after.
func TestE2ERealtime(t *testing.T) {
	e := newEnvWith(t, func(c *launcher.Config) { c.Options.CPUSet = []uint{0, 1} })
	reserveHugepages(t, realtimePages)
	unlimitRealtime(t)
	vmi := decodeVMI(t, fmt.Sprintf(realtimeVMI, uniqueName("e2e-realtime")))
	plan, err := e.l.Plan(ctxFor(t, time.Minute), vmi)
	if err != nil {
		t.Fatal(err)
	}
	xml := string(plan.XML)
	for _, want := range []string{`<vcpusched vcpus="1" scheduler="fifo" priority="1">`, `<pmu state="off">`, `<nosharepages>`, `<numatune>`} {
		if !strings.Contains(xml, want) {
			t.Fatalf("the domain lacks %s:\n%s", want, xml)
		}
	}
	if strings.Contains(xml, `<vcpusched vcpus="0"`) {
		t.Fatalf("the domain schedules vCPU 0, which the mask does not name:\n%s", xml)
	}
	dom, err := e.conn.DomainDefineXMLFlags(xml, libvirt.DOMAIN_DEFINE_VALIDATE)
	if err != nil {
		t.Fatalf("define: %v", err)
	}
	name, _ := dom.GetName()
	t.Cleanup(func() {
		_ = dom.Destroy()
		if err := dom.Undefine(); err != nil {
			t.Errorf("undefine %s: %v", name, err)
		}
		dom.Free()
	})
	if err := dom.CreateWithFlags(libvirt.DOMAIN_START_PAUSED); err != nil {
		t.Fatalf("start paused: %v", err)
	}
	pid := strconv.Itoa(readQEMUPid(t, vmi))
	got := map[string]string{}
	tasks, err := filepath.Glob(filepath.Join("/proc", pid, "task", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		comm, err := os.ReadFile(filepath.Join(task, "comm"))
		if err != nil {
			continue // the thread ended
		}
		vcpu, ok := strings.CutPrefix(strings.TrimSpace(string(comm)), "CPU ")
		if !ok {
			continue
		}
		vcpu, _, _ = strings.Cut(vcpu, "/") // "CPU 1/TCG", "CPU 1/KVM"
		policy, priority := threadSched(t, task)
		got[vcpu] = fmt.Sprintf("policy %d priority %d", policy, priority)
	}
	t.Logf("QEMU %s, vCPU threads: %v", pid, got)
	// SCHED_FIFO is policy 1; /proc's prio is 99 - the realtime priority
	// for realtime threads, 120 + nice for the others (policy 0).
	if got["1"] != "policy 1 priority 1" {
		t.Errorf("vCPU 1: %s, want SCHED_FIFO (policy 1) at priority 1", got["1"])
	}
	if v, ok := got["0"]; !ok || strings.HasPrefix(v, "policy 1 ") || strings.HasPrefix(v, "policy 2 ") {
		t.Errorf("vCPU 0: %q, want a thread that is not realtime", v)
	}
}

// threadSched reads a thread's policy and, for a realtime one, its
// realtime priority from its sched file in /proc.
func threadSched(t *testing.T, task string) (policy, priority int) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(task, "sched"))
	if err != nil {
		t.Fatal(err)
	}
	prio := -1
	policy = -1
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil {
			continue
		}
		switch strings.TrimSpace(key) {
		case "policy":
			policy = n
		case "prio":
			prio = n
		}
	}
	if policy < 0 || prio < 0 {
		t.Fatalf("%s/sched gives no policy and prio:\n%s", task, raw)
	}
	if policy == 1 || policy == 2 {
		return policy, 99 - prio
	}
	return policy, 0
}

// reserveHugepages makes n 2Mi hugepages free for the test, raising the
// host's pool by what it lacks and lowering it again after, or skips the
// test where the pool cannot grow.
func reserveHugepages(t *testing.T, n int) {
	t.Helper()
	const dir = "/sys/kernel/mm/hugepages/hugepages-2048kB"
	read := func(file string) int {
		raw, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			hosttest.Missing(t, "no 2Mi hugepages: %v", err)
		}
		v, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	free := read("free_hugepages")
	if free >= n {
		return
	}
	total := read("nr_hugepages")
	write := func(v int) error {
		return os.WriteFile(filepath.Join(dir, "nr_hugepages"), []byte(strconv.Itoa(v)), 0o644)
	}
	if err := write(total + n - free); err != nil {
		hosttest.Missing(t, "cannot reserve %d 2Mi hugepages: %v", n-free, err)
	}
	t.Cleanup(func() {
		if err := write(total); err != nil {
			t.Errorf("giving the hugepages back: %v", err)
		}
	})
	if got := read("free_hugepages"); got < n {
		hosttest.Missing(t, "%d 2Mi hugepages free after reserving, want %d", got, n)
	}
}

// rtRuntime is the kernel's limit of the CPU time realtime tasks take.
const rtRuntime = "/proc/sys/kernel/sched_rt_runtime_us"

// unlimitRealtime makes the kernel's realtime runtime unlimited (-1) for
// the test, as on a node KubeVirt labels kubevirt.io/realtime (hostcaps.
// RealtimeLabels), and sets it back after, once the domain is gone (the
// kernel refuses a limit again while a task of a cgroup without realtime
// runtime is realtime). With a limit, a kernel with realtime group
// scheduling (CONFIG_RT_GROUP_SCHED, cgroup v1) refuses SCHED_FIFO to
// threads of cgroups given no realtime runtime, which libvirt's
// machine cgroups are: libvirt fails to start the domain ("Cannot set
// scheduler parameters ...: Operation not permitted"), as KubeVirt's
// virt-handler would fail to set the threads' policy.
func unlimitRealtime(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile(rtRuntime)
	if err != nil {
		hosttest.Missing(t, "no realtime runtime limit to read: %v", err)
	}
	old := strings.TrimSpace(string(raw))
	if old == "-1" {
		return
	}
	if err := os.WriteFile(rtRuntime, []byte("-1"), 0o644); err != nil {
		hosttest.Missing(t, "the realtime runtime (%s) cannot be made unlimited: %v", old, err)
	}
	t.Logf("%s: %s made -1 for the test", rtRuntime, old)
	t.Cleanup(func() {
		if err := os.WriteFile(rtRuntime, []byte(old), 0o644); err != nil {
			t.Errorf("setting %s back to %s: %v", rtRuntime, old, err)
		}
	})
}
