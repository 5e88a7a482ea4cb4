package launcher

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The metrics document is vhostmd's, as KubeVirt's virt-handler writes it
// (pkg/downwardmetrics: the metrics, their order, types, contexts and
// units; reals with six decimals; indented by two spaces; a blank line
// after it, which vm-dump-metrics waits for).
func TestMetricsDocument(t *testing.T) {
	s := metricsSample{
		HostName: "node01", VirtProductInfo: "qemu-7.2.22",
		GuestCPUTime: 1500 * time.Millisecond, GuestVCPUs: 2, GuestMemKiB: 131072,
		HostPackages: 1, HostCPUTime: 12345 * time.Second / 100,
		MemTotal: 8000, MemFree: 3000, Buffers: 100, Cached: 900,
		SwapTotal: 1000, SwapFree: 400, SwapCached: 50,
		PagesSwappedIn: 10, PagesSwappedOut: 3, Page: 4096,
		Time: time.Unix(1796212800, 0),
	}
	want := `<metrics>
  <metric type="string" context="host">
    <name>HostName</name>
    <value>node01</value>
  </metric>
  <metric type="string" context="host">
    <name>HostSystemInfo</name>
    <value>linux</value>
  </metric>
  <metric type="string" context="host">
    <name>VirtualizationVendor</name>
    <value>kubevirt.io</value>
  </metric>
  <metric type="string" context="host">
    <name>VirtProductInfo</name>
    <value>qemu-7.2.22</value>
  </metric>
  <metric type="real64" context="vm" unit="s">
    <name>TotalCPUTime</name>
    <value>1.500000</value>
  </metric>
  <metric type="int64" context="vm">
    <name>ResourceProcessorLimit</name>
    <value>2</value>
  </metric>
  <metric type="uint64" context="vm" unit="KiB">
    <name>PhysicalMemoryAllocatedToVirtualSystem</name>
    <value>131072</value>
  </metric>
  <metric type="uint64" context="vm" unit="KiB">
    <name>ResourceMemoryLimit</name>
    <value>131072</value>
  </metric>
  <metric type="int64" context="host">
    <name>NumberOfPhysicalCPUs</name>
    <value>1</value>
  </metric>
  <metric type="real64" context="host" unit="s">
    <name>TotalCPUTime</name>
    <value>123.450000</value>
  </metric>
  <metric type="uint64" context="host" unit="KiB">
    <name>FreePhysicalMemory</name>
    <value>3000</value>
  </metric>
  <metric type="uint64" context="host" unit="KiB">
    <name>FreeVirtualMemory</name>
    <value>3400</value>
  </metric>
  <metric type="uint64" context="host" unit="KiB">
    <name>MemoryAllocatedToVirtualServers</name>
    <value>4000</value>
  </metric>
  <metric type="uint64" context="host" unit="KiB">
    <name>UsedVirtualMemory</name>
    <value>4950</value>
  </metric>
  <metric type="uint64" context="host" unit="KiB">
    <name>PagedInMemory</name>
    <value>40</value>
  </metric>
  <metric type="uint64" context="host" unit="KiB">
    <name>PagedOutMemory</name>
    <value>12</value>
  </metric>
  <metric type="int64" context="host" unit="s">
    <name>Time</name>
    <value>1796212800</value>
  </metric>
</metrics>

`
	if got := string(s.document()); got != want {
		t.Errorf("document:\n%s\nwant:\n%s", got, want)
	}
}

// The channel answers each request the guest writes: the document for
// "GET /metrics/XML" (a query is allowed), INVALID REQUEST for another
// method, path or a request without its blank line; it ends when the
// connection does.
func TestServeMetricsConn(t *testing.T) {
	host, guest := net.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serveMetricsConn(context.Background(), host, 0, func() []byte { return []byte("<metrics/>\n\n") })
	}()
	r := bufio.NewReader(guest)
	ask := func(req string) string {
		t.Helper()
		if _, err := io.WriteString(guest, req); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString(line)
			if line == "\n" {
				return b.String()
			}
		}
	}
	for _, tc := range []struct{ req, want string }{
		{"GET /metrics/XML\n\n", "<metrics/>\n\n"},
		{"GET /metrics/XML?x=1\r\n\r\n", "<metrics/>\n\n"},
		{"POST /metrics/XML\n\n", metricsInvalid},
		{"GET /other\n\n", metricsInvalid},
		{"GET\n\n", metricsInvalid},
		{"GET /metrics/XML\nHost: x\n", metricsInvalid},
		{"GET /metrics/XML\n\n", "<metrics/>\n\n"},
	} {
		if got := ask(tc.req); got != tc.want {
			t.Errorf("%q: answer %q, want %q", tc.req, got, tc.want)
		}
	}
	guest.Close()
	if err := <-done; err != io.EOF && err != io.ErrClosedPipe {
		t.Errorf("after the guest's side closed: %v, want EOF", err)
	}
}

// The host's figures come from /proc/meminfo, /proc/vmstat, /proc/stat
// (user, nice and system ticks) and the CPUs' physical package ids.
func TestReadHostMetrics(t *testing.T) {
	dir := t.TempDir()
	proc, sys := filepath.Join(dir, "proc"), filepath.Join(dir, "sys")
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("proc/meminfo", "MemTotal:        8000 kB\nMemFree:         3000 kB\nBuffers:          100 kB\nCached:           900 kB\nSwapCached:        50 kB\nSwapTotal:       1000 kB\nSwapFree:         400 kB\n")
	write("proc/vmstat", "nr_free_pages 12\npswpin 10\npswpout 3\n")
	write("proc/stat", "cpu  100 20 30 999 0 0 0\ncpu0 100 20 30 999 0 0 0\n")
	for i, pkg := range []string{"0", "0", "1"} {
		write(filepath.Join("sys/devices/system/cpu", "cpu"+string(rune('0'+i)), "topology/physical_package_id"), pkg+"\n")
	}
	var s metricsSample
	if err := readHostMetrics(&s, proc, sys); err != nil {
		t.Fatal(err)
	}
	if s.MemTotal != 8000 || s.MemFree != 3000 || s.Buffers != 100 || s.Cached != 900 || s.SwapTotal != 1000 || s.SwapFree != 400 || s.SwapCached != 50 {
		t.Errorf("meminfo: %+v", s)
	}
	if s.PagesSwappedIn != 10 || s.PagesSwappedOut != 3 || s.Page == 0 {
		t.Errorf("vmstat: in %d out %d page %d", s.PagesSwappedIn, s.PagesSwappedOut, s.Page)
	}
	if s.HostCPUTime != 1500*time.Millisecond || s.HostPackages != 2 {
		t.Errorf("cpu time %v, packages %d; want 1.5s, 2", s.HostCPUTime, s.HostPackages)
	}
}
