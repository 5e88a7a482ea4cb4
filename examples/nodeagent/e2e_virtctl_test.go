package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/testcluster"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/subresources"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// TestE2EVirtctl runs KubeVirt's real virtctl (v1.8.0) and kubectl
// against the real kube-apiserver, whose aggregation layer sends
// subresources.kubevirt.io to the subresource API server, which reaches
// the VMI's node agent over mutual TLS; the agent runs the test guest on
// the real libvirtd. One cluster, one agent and one guest serve every
// subtest, in order; the agent maps one claim of the test's namespace to
// a file.
func TestE2EVirtctl(t *testing.T) {
	var ns string
	w := startVirtctlWorld(t, func(w *virtctlWorld) []string {
		ns = w.namespace(t, "virtctl")
		return volumeClaimFlags(t, ns)
	})
	t.Run("Discovery", func(t *testing.T) { testVirtctlDiscovery(t, w) })
	t.Run("ConsoleWaitsForRunning", func(t *testing.T) { testVirtctlConsoleWaits(t, w, ns) })
	t.Run("PauseStopsTheClock", func(t *testing.T) { testVirtctlPause(t, w, ns) })
	t.Run("VNC", func(t *testing.T) { testVirtctlVNC(t, w, ns) })
	t.Run("GuestOSInfoWithoutAgent", func(t *testing.T) { testVirtctlGuestOSInfo(t, w, ns) })
	t.Run("SoftReboot", func(t *testing.T) { testVirtctlSoftReboot(t, w, ns) })
	t.Run("AddVolumeRemoveVolume", func(t *testing.T) { testVirtctlVolumes(t, w, ns) })
	t.Run("ConsoleRBAC", func(t *testing.T) { testVirtctlRBAC(t, w, ns) })
	t.Run("VMStartStopRestart", func(t *testing.T) { testVirtctlVM(t, w, ns) })
	t.Run("Migrate", func(t *testing.T) { testVirtctlMigrate(t, w, ns) })
	if err := w.client.Delete(context.Background(), &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tiny"}}); err != nil {
		t.Fatal(err)
	}
	w.waitGone(t, ns, "tiny", 2*time.Minute)
}

// testVirtctlDiscovery: the API server lists the group's versions (both
// APIServices Available), the resource list is virt-api's, health answers
// with the API server's version, and virtctl version prints the server's
// version as it reads it (/apis/subresources.kubevirt.io, then the
// preferred version's /version).
func testVirtctlDiscovery(t *testing.T, w *virtctlWorld) {
	ctx := context.Background()
	out, stderr, err := w.cluster.Kubectl(ctx, "api-versions")
	if err != nil {
		t.Fatalf("kubectl api-versions: %v\n%s", err, stderr)
	}
	for _, gv := range []string{"subresources.kubevirt.io/v1", "subresources.kubevirt.io/v1alpha3"} {
		if !strings.Contains(out, gv+"\n") {
			t.Errorf("kubectl api-versions lacks %s:\n%s", gv, out)
		}
	}
	out, stderr, err = w.cluster.Kubectl(ctx, "get", "--raw", "/apis/subresources.kubevirt.io/v1")
	if err != nil {
		t.Fatalf("kubectl get --raw: %v\n%s", err, stderr)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("resource list: %v\n%s", err, out)
	}
	names := map[string]bool{}
	for _, r := range list.APIResources {
		names[r.Name] = r.Namespaced
	}
	if list.GroupVersion != "subresources.kubevirt.io/v1" || len(list.APIResources) != 31 {
		t.Errorf("resource list of %s with %d resources, want subresources.kubevirt.io/v1 with virt-api's 31", list.GroupVersion, len(list.APIResources))
	}
	for _, r := range []string{"virtualmachineinstances/console", "virtualmachineinstances/vnc", "virtualmachineinstances/pause",
		"virtualmachineinstances/softreboot", "virtualmachineinstances/guestosinfo", "virtualmachines/start", "virtualmachines/restart"} {
		if !names[r] {
			t.Errorf("resource list lacks namespaced %s", r)
		}
	}
	out, stderr, err = w.cluster.Kubectl(ctx, "get", "--raw", "/apis/subresources.kubevirt.io/v1/healthz")
	if err != nil || !strings.Contains(out, `"connectivity": "ok"`) || !strings.Contains(out, `"gitVersion": "v1.34.2"`) {
		t.Errorf("healthz: %v %s\n%s", err, stderr, out)
	}
	out = w.mustRun(t, "version")
	if !strings.Contains(out, `Client Version: version.Info{GitVersion:"v1.8.0"`) {
		t.Errorf("virtctl version: no client v1.8.0:\n%s", out)
	}
	// The server's version is the KubeVirt API it serves, and the test
	// binary's build information.
	for _, want := range []string{`Server Version: version.Info{GitVersion:"v1.8.0+vmi2libvirt"`, fmt.Sprintf(`GoVersion:%q, Compiler:"gc", Platform:"%s/%s"}`, runtime.Version(), runtime.GOOS, runtime.GOARCH)} {
		if !strings.Contains(out, want) {
			t.Errorf("virtctl version: no %s in:\n%s", want, out)
		}
	}
}

// testVirtctlConsoleWaits: virtctl console of a VMI that does not run yet
// keeps asking (the server answers 400 until it runs) and connects once
// the VMI runs; the guest's shell answers what is typed; a second virtctl
// console takes the console over and the first ends, as on KubeVirt; Ctrl-]
// leaves with exit status 0. The VMI is created unbound (no agent claims
// it: Pending) and bound to the node once virtctl has asked for a while.
func testVirtctlConsoleWaits(t *testing.T, w *virtctlWorld, ns string) {
	w.create(t, guestVMI(ns, "tiny", 60, testguest.ActionACPI))
	c := w.console(t, "", ns, "tiny")
	time.Sleep(3 * time.Second)
	select {
	case <-c.done:
		t.Fatalf("virtctl console gave up on a VMI that does not run yet: %v\nstderr:\n%s", c.err, c.errOut.String())
	default:
	}
	if text := c.errOut.String(); strings.Contains(text, "Successfully connected") {
		t.Fatalf("virtctl console connected to a Pending VMI:\n%s", text)
	}
	vmi := w.get(t, ns, "tiny")
	metav1.SetMetaDataLabel(&vmi.ObjectMeta, virtv1.NodeNameLabel, w.node)
	if err := w.client.Update(context.Background(), vmi); err != nil {
		t.Fatal(err)
	}
	c.connected(t, 3*time.Minute)
	waitConsole(t, w.dir, ns, "tiny", testguest.ShellMarker, 3*time.Minute)
	if got := c.ask(t, "echo $((6*7))", regexp.MustCompile(`\n(42)\r?\n`), time.Minute); got != "42" {
		t.Errorf("the shell answered %q, want 42", got)
	}

	// A second console takes the console over, as on KubeVirt: the first
	// is disconnected.
	second := w.console(t, "", ns, "tiny")
	second.connected(t, time.Minute)
	if err := c.wait(t, time.Minute); err == nil {
		t.Logf("the first virtctl console ended with exit status 0 once taken over")
	}
	if got := second.ask(t, "echo $((7*8))", regexp.MustCompile(`\n(56)\r?\n`), time.Minute); got != "56" {
		t.Errorf("the shell answered %q on the second console, want 56", got)
	}
	second.leave(t)
	if vmi := w.get(t, ns, "tiny"); vmi.Status.Phase != virtv1.Running {
		t.Errorf("VMI %s after leaving the console, want Running", describe(vmi))
	}
}

// testVirtctlPause: virtctl pause vmi sets the Paused condition and the
// guest's clock stops: its uptime, read on the console before the pause
// and after the unpause, grows by less than the time that passed by at
// least the pause; a second pause is refused as virt-api refuses it;
// virtctl unpause takes the condition away; the agent records
// virt-handler's Events.
func testVirtctlPause(t *testing.T, w *virtctlWorld, ns string) {
	c := w.console(t, "", ns, "tiny")
	c.connected(t, time.Minute)
	before, at := c.uptime(t), time.Now()

	if out := w.mustRun(t, "-n", ns, "pause", "vmi", "tiny"); !strings.Contains(out, "VMI tiny was scheduled to pause") {
		t.Errorf("virtctl pause printed %q", out)
	}
	paused := w.waitVMI(t, ns, "tiny", "Paused", time.Minute, func(v *virtv1.VirtualMachineInstance) bool {
		return conditionStatus(v, virtv1.VirtualMachineInstancePaused) == k8sv1.ConditionTrue
	})
	if c := condition(paused, virtv1.VirtualMachineInstancePaused); c.Reason != "PausedByUser" {
		t.Errorf("Paused condition %+v, want reason PausedByUser", c)
	}
	_, stderr, err := w.run(t, "", "-n", ns, "pause", "vmi", "tiny")
	if err == nil || !strings.Contains(stderr, "VMI is already paused") {
		t.Errorf("second virtctl pause: %v, stderr %q, want virt-api's conflict", err, stderr)
	}
	const pause = 5 * time.Second
	time.Sleep(pause)
	if out := w.mustRun(t, "-n", ns, "unpause", "vmi", "tiny"); !strings.Contains(out, "VMI tiny was scheduled to unpause") {
		t.Errorf("virtctl unpause printed %q", out)
	}
	w.waitVMI(t, ns, "tiny", "unpaused", time.Minute, func(v *virtv1.VirtualMachineInstance) bool {
		return condition(v, virtv1.VirtualMachineInstancePaused) == nil
	})
	after, passed := c.uptime(t), time.Since(at)
	guest := time.Duration((after - before) * float64(time.Second))
	t.Logf("uptime %.2f s → %.2f s: the guest counted %s while %s passed", before, after, guest.Round(10*time.Millisecond), passed.Round(10*time.Millisecond))
	if guest <= 0 || passed-guest < pause-time.Second {
		t.Errorf("the guest counted %s of the %s that passed, paused %s: its clock did not stop", guest, passed, pause)
	}
	c.leave(t)
	w.waitEvent(t, ns, paused.UID, "Paused", time.Minute)
	w.waitEvent(t, ns, paused.UID, "Unpaused", time.Minute)
}

// testVirtctlVNC: virtctl vnc --proxy-only prints the port of its local
// proxy; through it an RFB handshake and a full framebuffer update give
// the guest's VGA text mode. While that session lasts, one that asks to
// preserve it is refused; one that does not ask closes it and is served.
func testVirtctlVNC(t *testing.T, w *virtctlWorld, ns string) {
	conn := w.vncProxy(t, ns)
	vncHandshake(t, conn, ns)
	_, stderr, err := w.run(t, "", "-n", ns, "vnc", "--proxy-only", "--preserve-session", "tiny")
	if err == nil || !strings.Contains(stderr, "can't access VMI tiny: Internal error occurred") || !strings.Contains(stderr, "Active VNC connection. Request denied.") {
		t.Errorf("virtctl vnc --preserve-session beside a session: %v, want refused\n%s", err, stderr)
	}
	next := w.vncProxy(t, ns)
	vncHandshake(t, next, ns)
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Errorf("the first session once a new one opened: %v, want it closed (EOF)", err)
	}
}

// vncProxy starts virtctl vnc --proxy-only for the VMI ns/tiny and
// connects to the port it prints; both end with the test.
func (w *virtctlWorld) vncProxy(t *testing.T, ns string) net.Conn {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cmd := w.command(ctx, "", "-n", ns, "vnc", "--proxy-only", "tiny")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("virtctl vnc --proxy-only: %v\nstderr:\n%s", err, stderr.String())
	}
	var proxy struct{ Port int }
	if err := json.Unmarshal([]byte(line), &proxy); err != nil || proxy.Port == 0 {
		t.Fatalf("virtctl vnc --proxy-only printed %q (%v), want {\"port\":N}", line, err)
	}
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", proxy.Port), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// testVirtctlGuestOSInfo: without a guest agent, virtctl guestosinfo
// fails with virt-api's answer.
func testVirtctlGuestOSInfo(t *testing.T, w *virtctlWorld, ns string) {
	stdout, stderr, err := w.run(t, "", "-n", ns, "guestosinfo", "tiny")
	if exitCode(err) != 1 || !strings.Contains(stderr, "VMI does not have guest agent connected") {
		t.Errorf("virtctl guestosinfo without an agent: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	t.Logf("virtctl guestosinfo: %s", strings.TrimSpace(stderr))
}

// testVirtctlSoftReboot: virtctl soft-reboot presses the ACPI power
// button as a reboot: the guest powers itself off, QEMU resets it, and it
// boots again — a second report on its serial console — while the VMI
// stays Running, its domain the same.
func testVirtctlSoftReboot(t *testing.T, w *virtctlWorld, ns string) {
	boots, shells := strings.Count(serialLog(w.dir, ns, "tiny"), testguest.BeginMarker), strings.Count(serialLog(w.dir, ns, "tiny"), testguest.ShellMarker)
	_, id, _ := w.domain(t, ns, "tiny")
	if out := w.mustRun(t, "-n", ns, "soft-reboot", "tiny"); !strings.Contains(out, "VMI tiny was scheduled to soft-reboot") {
		t.Errorf("virtctl soft-reboot printed %q", out)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for strings.Count(serialLog(w.dir, ns, "tiny"), testguest.BeginMarker) <= boots {
		if time.Now().After(deadline) {
			t.Fatalf("the guest did not boot again within 3 minutes; console:\n%s", serialLog(w.dir, ns, "tiny"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	log := serialLog(w.dir, ns, "tiny")
	if !strings.Contains(log, "testguest: power button") {
		t.Errorf("the guest rebooted without seeing the power button; console:\n%s", log)
	}
	if _, again, _ := w.domain(t, ns, "tiny"); again != id {
		t.Errorf("domain ID %d after the soft reboot, want %d (the same domain, reset)", again, id)
	}
	vmi := w.waitReady(t, ns, "tiny", time.Minute)
	w.waitEvent(t, ns, vmi.UID, "SoftRebooted", time.Minute)
	for strings.Count(serialLog(w.dir, ns, "tiny"), testguest.ShellMarker) <= shells {
		if time.Now().After(deadline) {
			t.Fatalf("no shell after the second boot; console:\n%s", serialLog(w.dir, ns, "tiny"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// testVirtctlRBAC: a user whom RBAC does not allow
// virtualmachineinstances/console is refused by the API server (virtctl
// fails with 403), one who is allowed connects. The server's own
// authorization (a SubjectAccessReview per request, as virt-api's) refuses
// the first too, asked directly as the aggregation layer asks, and
// refuses requests without the aggregation layer's client certificate.
func testVirtctlRBAC(t *testing.T, w *virtctlWorld, ns string) {
	ctx := context.Background()
	kubeconfig := func(name string) string {
		u, err := w.cluster.Env.AddUser(envtest.User{Name: name}, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := u.KubeConfig()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "kubeconfig")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	allowed, denied := uniqueName("alice"), uniqueName("bob")
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "console"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{subresources.Group}, Resources: []string{"virtualmachineinstances/console"}, Verbs: []string{"get"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "console"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "console"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: allowed}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := w.client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	c := w.console(t, kubeconfig(denied), ns, "tiny")
	err := c.wait(t, time.Minute)
	// The API server's 403 Forbidden, as virtctl prints it.
	forbidden := fmt.Sprintf(`virtualmachineinstances.subresources.kubevirt.io "tiny" is forbidden: User %q cannot get resource "virtualmachineinstances/console" in API group "subresources.kubevirt.io" in the namespace %q`, denied, ns)
	if exitCode(err) != 1 || strings.TrimSpace(c.errOut.String()) != forbidden {
		t.Errorf("virtctl console of a user without the right: %v, want exit status 1 and %s\nstderr:\n%s", err, forbidden, c.errOut.String())
	}
	t.Logf("virtctl console of %s: %s", denied, strings.TrimSpace(c.errOut.String()))
	c = w.console(t, kubeconfig(allowed), ns, "tiny")
	c.connected(t, time.Minute)
	if got := c.ask(t, "echo ok-$((2+3))", regexp.MustCompile(`\nok-(5)\r?\n`), time.Minute); got != "5" {
		t.Errorf("the shell answered %q, want 5", got)
	}
	c.leave(t)

	// The server itself, asked as the aggregation layer asks.
	front, err := tls.LoadX509KeyPair(filepath.Join(w.cluster.FrontProxy, "tls.crt"), filepath.Join(w.cluster.FrontProxy, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	agentClient, err := tls.LoadX509KeyPair(filepath.Join(w.certs("controlplane"), "tls.crt"), filepath.Join(w.certs("controlplane"), "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(w.certs("subresources"), "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	ask := func(cert *tls.Certificate, user, path string) (int, string) {
		t.Helper()
		cfg := &tls.Config{RootCAs: roots, ServerName: subresourcesService + "." + subresourcesNamespace + ".svc"}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		req, err := http.NewRequest(http.MethodGet, "https://"+w.server.Addr().String()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.Header.Set(testcluster.UserHeader, user)
			req.Header.Set(testcluster.GroupHeader, "system:authenticated")
		}
		resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	base := "/apis/subresources.kubevirt.io/v1/namespaces/" + ns + "/virtualmachineinstances/"
	for _, c := range []struct {
		what       string
		cert       *tls.Certificate
		user, path string
		code       int
		body       string
	}{
		{"a user without the right", &front, denied, base + "tiny/console", http.StatusUnauthorized, ""},
		{"a user with the right, on a VMI that does not exist", &front, allowed, base + "nosuch/console", http.StatusNotFound,
			`virtualmachineinstance.kubevirt.io \"nosuch\" not found`},
		{"a user with the right to the console, not to guestosinfo", &front, allowed, base + "tiny/guestosinfo", http.StatusUnauthorized, ""},
		{"no client certificate", nil, allowed, base + "tiny/console", http.StatusUnauthorized, "request is not authenticated"},
		{"a client certificate of another authority", &agentClient, allowed, base + "tiny/console", http.StatusUnauthorized, "request is not authenticated"},
		{"discovery, without a certificate", nil, "", "/apis/subresources.kubevirt.io/v1", http.StatusOK, `"virtualmachineinstances/console"`},
	} {
		code, body := ask(c.cert, c.user, c.path)
		if code != c.code || !strings.Contains(body, c.body) {
			t.Errorf("%s: %d %q, want %d with %q", c.what, code, body, c.code, c.body)
		}
	}
}

// testVirtctlVM: virtctl start, stop and restart change a VirtualMachine
// as virt-api does — its runStrategy (Halted ↔ Always) or, for Manual,
// start and stop requests in status.stateChangeRequests, and a restart's
// stop request names the VMI's UID — and refuse what virt-api refuses.
// (No VM controller acts on them yet.)
func testVirtctlVM(t *testing.T, w *virtctlWorld, ns string) {
	w.vmCRDFixture(t)
	ctx := context.Background()
	newVM := func(name string, strategy virtv1.VirtualMachineRunStrategy) {
		vm := &virtv1.VirtualMachine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: virtv1.VirtualMachineSpec{RunStrategy: &strategy, Template: &virtv1.VirtualMachineInstanceTemplateSpec{
				Spec: guestVMI(ns, name, 60, testguest.ActionACPI).Spec,
			}},
		}
		if err := w.client.Create(ctx, vm); err != nil {
			t.Fatal(err)
		}
	}
	strategy := func(name string) virtv1.VirtualMachineRunStrategy {
		s, err := w.getVM(t, ns, name).RunStrategy()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	refused := func(want string, args ...string) {
		t.Helper()
		_, stderr, err := w.run(t, "", append([]string{"-n", ns}, args...)...)
		if err == nil || !strings.Contains(stderr, want) {
			t.Errorf("virtctl %s: %v, stderr %q, want %q", strings.Join(args, " "), err, stderr, want)
		}
	}

	newVM("halted", virtv1.RunStrategyHalted)
	if out := w.mustRun(t, "-n", ns, "start", "halted"); !strings.Contains(out, "VM halted was scheduled to start") {
		t.Errorf("virtctl start printed %q", out)
	}
	if s := strategy("halted"); s != virtv1.RunStrategyAlways {
		t.Errorf("runStrategy after virtctl start: %s, want Always", s)
	}
	refused("Always does not support manual start requests", "start", "halted")
	w.mustRun(t, "-n", ns, "stop", "halted")
	if s := strategy("halted"); s != virtv1.RunStrategyHalted {
		t.Errorf("runStrategy after virtctl stop: %s, want Halted", s)
	}
	refused("VM is not running", "stop", "halted")
	refused("RunStategy Halted does not support manual restart requests", "restart", "halted")

	newVM("manual", virtv1.RunStrategyManual)
	w.mustRun(t, "-n", ns, "start", "manual")
	if got := w.getVM(t, ns, "manual").Status.StateChangeRequests; len(got) != 1 || got[0].Action != virtv1.StartRequest || got[0].UID != nil {
		t.Errorf("stateChangeRequests after virtctl start of a Manual VM: %+v, want one start request", got)
	}
	refused("stop/start already underway", "start", "manual")
	if s := strategy("manual"); s != virtv1.RunStrategyManual {
		t.Errorf("runStrategy of the Manual VM after start: %s, want Manual kept", s)
	}

	// A VM named as the running VMI: the restart's stop request names it.
	newVM("tiny", virtv1.RunStrategyManual)
	uid := w.get(t, ns, "tiny").UID
	w.mustRun(t, "-n", ns, "restart", "tiny")
	got := w.getVM(t, ns, "tiny").Status.StateChangeRequests
	if len(got) != 2 || got[0].Action != virtv1.StopRequest || got[0].UID == nil || *got[0].UID != uid || got[1].Action != virtv1.StartRequest {
		t.Errorf("stateChangeRequests after virtctl restart: %+v, want stop of UID %s, then start", got, uid)
	}
	if vmi := w.get(t, ns, "tiny"); vmi.UID != uid || vmi.Status.Phase != virtv1.Running {
		t.Errorf("VMI %s after the restart request, want the same Running VMI (no VM controller acts)", describe(vmi))
	}
	refused(`virtualmachine.kubevirt.io "nosuch" not found`, "start", "nosuch")
}

// testVirtctlMigrate: virtctl migrate of a running VM's VMI creates a
// VirtualMachineInstanceMigration of it, as virt-api does (generateName
// kubevirt-migrate-vm-, spec.vmiName); where no CRD serves migrations the
// answer is virt-api's for a failed create: 500 with the API server's 404
// inside. (This world has one node: the migration finds no target;
// TestE2EMigrate carries one out.)
func testVirtctlMigrate(t *testing.T, w *virtctlWorld, ns string) {
	var migrations unstructured.UnstructuredList
	migrations.SetGroupVersionKind(virtv1.GroupVersion.WithKind("VirtualMachineInstanceMigrationList"))
	listErr := w.client.List(context.Background(), &migrations, client.InNamespace(ns))
	served := listErr == nil
	stdout, stderr, err := w.run(t, "", "-n", ns, "migrate", "tiny")
	if !served {
		if err == nil || !strings.Contains(stderr, "the server could not find the requested resource") {
			t.Errorf("virtctl migrate without the migration CRD: %v, stderr %q, want the failed create", err, stderr)
		}
		t.Logf("virtctl migrate (no migration CRD: %v): %s", listErr, strings.TrimSpace(stderr))
		return
	}
	if err != nil || !strings.Contains(stdout, "VM tiny was scheduled to migrate") {
		t.Fatalf("virtctl migrate: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if err := w.client.List(context.Background(), &migrations, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(migrations.Items) != 1 {
		t.Fatalf("%d migrations after virtctl migrate, want 1", len(migrations.Items))
	}
	m := migrations.Items[0]
	vmiName, _, _ := unstructured.NestedString(m.Object, "spec", "vmiName")
	if !strings.HasPrefix(m.GetName(), "kubevirt-migrate-vm-") || vmiName != "tiny" {
		t.Errorf("migration %s of VMI %q, want kubevirt-migrate-vm-... of tiny", m.GetName(), vmiName)
	}
}
