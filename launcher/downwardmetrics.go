package launcher

import (
	"bufio"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
)

// Downward metrics: a VMI with spec.domain.devices.downwardMetrics has a
// virtio-serial port, org.github.vhostmd.1, whose host side is a unix
// socket QEMU listens on (convert.Paths.DownwardMetricsSocket). As
// KubeVirt's virt-handler does, the launcher connects to it while the
// domain runs and answers each request the guest writes there
// ("GET /metrics/XML" and a blank line; vhostmd's vm-dump-metrics sends
// it) with the metrics document: vhostmd's XML, ended by a blank line.
// Anything else gets "INVALID REQUEST" and a blank line. At most one
// request a second is answered, as in KubeVirt.

// The metrics document's vocabulary (vhostmd's).
const (
	metricsRequestPath = "/metrics/XML"
	metricsInvalid     = "INVALID REQUEST\n\n"
	metricsUnavailable = "<metrics><!-- host metrics not available --><!-- VM metrics not available --></metrics>"
	metricsInterval    = time.Second
)

// metricsXML is vhostmd's metrics document.
type metricsXML struct {
	XMLName xml.Name    `xml:"metrics"`
	Metrics []metricXML `xml:"metric"`
}

// metricXML is one metric of it: its type (int64, uint64, real64,
// string...), its context (host or vm), name, value and unit.
type metricXML struct {
	Type    string `xml:"type,attr"`
	Context string `xml:"context,attr"`
	Unit    string `xml:"unit,attr,omitempty"`
	Name    string `xml:"name"`
	Value   string `xml:"value"`
}

// metricsSample is what one metrics document says: the host's and the
// guest's figures, read when the guest asks.
type metricsSample struct {
	// HostName is the launcher's Owner (KubeVirt's node name);
	// VirtProductInfo the hypervisor's version.
	HostName, VirtProductInfo string
	// The guest: the CPU time of its vCPUs, how many it has, the memory
	// its balloon gives it.
	GuestCPUTime time.Duration
	GuestVCPUs   int
	GuestMemKiB  uint64
	// The host: physical CPU packages, the CPU time spent in user, nice
	// and system mode, /proc/meminfo's figures (KiB), pages swapped in and
	// out (/proc/vmstat) and the page size, and the time.
	HostPackages                          int
	HostCPUTime                           time.Duration
	MemTotal, MemFree, Buffers, Cached    uint64
	SwapTotal, SwapFree, SwapCached       uint64
	PagesSwappedIn, PagesSwappedOut, Page uint64
	Time                                  time.Time
}

// document is the metrics document of s, in the order and with the types
// and units KubeVirt's virt-handler writes them, and the blank line that
// ends it.
func (s metricsSample) document() []byte {
	host := func(typ, name, unit, value string) metricXML {
		return metricXML{Type: typ, Context: "host", Name: name, Unit: unit, Value: value}
	}
	vm := func(typ, name, unit, value string) metricXML {
		return metricXML{Type: typ, Context: "vm", Name: name, Unit: unit, Value: value}
	}
	u := func(n uint64) string { return strconv.FormatUint(n, 10) }
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 6, 64) }
	kib := func(pages uint64) string { return u(pages * s.Page / 1024) }
	doc := metricsXML{Metrics: []metricXML{
		host("string", "HostName", "", s.HostName),
		host("string", "HostSystemInfo", "", "linux"),
		host("string", "VirtualizationVendor", "", "kubevirt.io"),
		host("string", "VirtProductInfo", "", s.VirtProductInfo),
		vm("real64", "TotalCPUTime", "s", secs(s.GuestCPUTime)),
		vm("int64", "ResourceProcessorLimit", "", strconv.Itoa(s.GuestVCPUs)),
		vm("uint64", "PhysicalMemoryAllocatedToVirtualSystem", "KiB", u(s.GuestMemKiB)),
		vm("uint64", "ResourceMemoryLimit", "KiB", u(s.GuestMemKiB)),
		host("int64", "NumberOfPhysicalCPUs", "", strconv.Itoa(s.HostPackages)),
		host("real64", "TotalCPUTime", "s", secs(s.HostCPUTime)),
		host("uint64", "FreePhysicalMemory", "KiB", u(s.MemFree)),
		host("uint64", "FreeVirtualMemory", "KiB", u(s.MemFree+s.SwapFree)),
		host("uint64", "MemoryAllocatedToVirtualServers", "KiB", u(s.MemTotal-s.MemFree-s.Buffers-s.Cached)),
		host("uint64", "UsedVirtualMemory", "KiB", u(s.MemTotal+s.SwapTotal-s.MemFree-s.Cached-s.Buffers-s.SwapCached)),
		host("uint64", "PagedInMemory", "KiB", kib(s.PagesSwappedIn)),
		host("uint64", "PagedOutMemory", "KiB", kib(s.PagesSwappedOut)),
		host("int64", "Time", "s", strconv.FormatInt(s.Time.Unix(), 10)),
	}}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		out = []byte(metricsUnavailable) // cannot be: only strings
	}
	return append(out, '\n', '\n')
}

// metricsAnswer is the answer to one request line of the guest: the
// document doc makes for "GET /metrics/XML", else metricsInvalid.
func metricsAnswer(request string, doc func() []byte) []byte {
	method, target, ok := strings.Cut(request, " ")
	if !ok || method != "GET" {
		return []byte(metricsInvalid)
	}
	u, err := url.ParseRequestURI(target)
	if err != nil || u.Path != metricsRequestPath {
		return []byte(metricsInvalid)
	}
	return doc()
}

// serveMetricsConn answers the requests read from conn until it ends (QEMU
// closes it when the domain stops) or ctx does, at most one every
// interval. A request is a line and a blank line.
func serveMetricsConn(ctx context.Context, conn io.ReadWriter, interval time.Duration, doc func() []byte) error {
	r := bufio.NewReader(conn)
	var last time.Time
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		blank, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		answer := []byte(metricsInvalid)
		if strings.TrimRight(blank, "\r\n") == "" {
			if wait := interval - time.Since(last); wait > 0 {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			answer = metricsAnswer(strings.TrimRight(line, "\r\n"), doc)
			last = time.Now()
		}
		if _, err := conn.Write(answer); err != nil {
			return err
		}
	}
}

// serveMetrics serves the downward metrics channel of st's domain, when
// vmi has one and no server runs for it yet: a goroutine connects to the
// channel's socket and answers the guest until the domain stops (or the
// launcher closes); the next Sync of a running domain starts it again.
func (l *Launcher) serveMetrics(st *vmiState, vmi *v1.VirtualMachineInstance) {
	if vmi.Spec.Domain.Devices.DownwardMetrics == nil || !st.metricsServed.CompareAndSwap(false, true) {
		return
	}
	socket := l.cfg.Layout.Paths(vmi).DownwardMetricsSocket
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer st.metricsServed.Store(false)
		conn, err := dialMetrics(l.ctx, socket)
		if err != nil {
			l.log.Warn("downward metrics: no channel", "vmi", st.key(), "socket", socket, "err", err)
			return
		}
		stop := context.AfterFunc(l.ctx, func() { conn.Close() })
		defer stop()
		defer conn.Close()
		err = serveMetricsConn(l.ctx, conn, metricsInterval, func() []byte { return l.metricsDocument(st) })
		if err != nil && !errors.Is(err, io.EOF) && l.ctx.Err() == nil {
			l.log.Debug("downward metrics: channel closed", "vmi", st.key(), "err", err)
		}
	}()
}

// dialMetrics connects to the channel's socket, waiting (up to a minute)
// for QEMU to listen.
func dialMetrics(ctx context.Context, socket string) (net.Conn, error) {
	var d net.Dialer
	deadline := time.Now().Add(time.Minute)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		conn, err := d.DialContext(ctx, "unix", socket)
		if err == nil || time.Now().After(deadline) {
			return conn, err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// metricsDocument reads the guest's and the host's figures now and makes
// their document, or the document that says none is available.
func (l *Launcher) metricsDocument(st *vmiState) []byte {
	s := metricsSample{HostName: l.cfg.Owner, Time: time.Now()}
	err := l.do(l.ctx, func(c *libvirt.Connect) error {
		if v, err := c.GetVersion(); err == nil {
			s.VirtProductInfo = fmt.Sprintf("qemu-%d.%d.%d", v/1000000, v/1000%1000, v%1000)
		}
		return lookupThen(st.name, func(dom *libvirt.Domain) error {
			info, err := dom.GetInfo()
			if err != nil {
				return err
			}
			s.GuestCPUTime, s.GuestVCPUs, s.GuestMemKiB = time.Duration(info.CpuTime), int(info.NrVirtCpu), info.Memory
			return nil
		})(c)
	})
	if err == nil {
		err = readHostMetrics(&s, "/proc", "/sys")
	}
	if err != nil {
		l.log.Debug("downward metrics unavailable", "vmi", st.key(), "err", err)
		return []byte(metricsUnavailable + "\n\n")
	}
	return s.document()
}

// readHostMetrics fills in the host's figures of s from the proc and sys
// file systems at procDir and sysDir.
func readHostMetrics(s *metricsSample, procDir, sysDir string) error {
	mem, err := readKeyed(filepath.Join(procDir, "meminfo"), ":")
	if err != nil {
		return err
	}
	s.MemTotal, s.MemFree, s.Buffers, s.Cached = mem["MemTotal"], mem["MemFree"], mem["Buffers"], mem["Cached"]
	s.SwapTotal, s.SwapFree, s.SwapCached = mem["SwapTotal"], mem["SwapFree"], mem["SwapCached"]
	vmstat, err := readKeyed(filepath.Join(procDir, "vmstat"), " ")
	if err != nil {
		return err
	}
	s.PagesSwappedIn, s.PagesSwappedOut, s.Page = vmstat["pswpin"], vmstat["pswpout"], uint64(os.Getpagesize())
	stat, err := os.ReadFile(filepath.Join(procDir, "stat"))
	if err != nil {
		return err
	}
	// "cpu  user nice system ..." in clock ticks, USER_HZ: 100 on Linux.
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line)
	if len(f) < 4 || f[0] != "cpu" {
		return fmt.Errorf("%s: no cpu line", filepath.Join(procDir, "stat"))
	}
	var ticks uint64
	for _, v := range f[1:4] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(procDir, "stat"), err)
		}
		ticks += n
	}
	s.HostCPUTime = time.Duration(ticks) * (time.Second / 100)
	ids, _ := filepath.Glob(filepath.Join(sysDir, "devices/system/cpu/cpu[0-9]*/topology/physical_package_id"))
	packages := map[string]bool{}
	for _, p := range ids {
		if b, err := os.ReadFile(p); err == nil {
			packages[strings.TrimSpace(string(b))] = true
		}
	}
	s.HostPackages = len(packages)
	return nil
}

// readKeyed reads a file of "key<sep> value [kB]" lines (/proc/meminfo,
// /proc/vmstat) into numbers by key; lines that are not are skipped.
func readKeyed(file, sep string) (map[string]uint64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, sep)
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.ParseUint(f[0], 10, 64); err == nil {
			out[strings.TrimSpace(k)] = n
		}
	}
	return out, nil
}
