package vmigen

import (
	"fmt"
	"strconv"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	v1 "kubevirt.io/api/core/v1"
)

// Memory sizes drawn, by hugepage size ("" for none). The plain sizes mix
// binary, decimal and fractional quantities, as users write them.
var memorySizes = map[string][]string{
	"":    {"64Mi", "128Mi", "256Mi", "512Mi", "1Gi", "1536Mi", "2Gi", "4Gi", "1G", "512M", "1.5Gi"},
	"2Mi": {"128Mi", "256Mi", "512Mi", "1Gi", "2Gi"},
	"1Gi": {"1Gi", "2Gi"},
}

// memory draws how the VMI asks for memory (a request, memory.guest, both,
// a request and a limit, a limit, or hugepages alone), hugepages, a memory
// hotplug maximum, and in the KubeVirt profile NUMA passthrough and
// realtime (with a mask) for dedicated CPUs with hugepages.
func (g *gen) memory() {
	d := &g.spec.Domain
	page := ""
	if g.hugepages {
		page = pickW(g, weighted[string]{4, "2Mi"}, weighted[string]{1, "1Gi"})
	}
	size := pick(g, memorySizes[page]...)
	forms := []weighted[string]{{5, "request"}, {3, "guest"}, {2, "guest+request"}, {2, "request+limit"}, {1, "limit"}}
	if page != "" {
		forms = append(forms, weighted[string]{2, "pages"})
	}
	form := pickW(g, forms...)
	mem := func() *v1.Memory {
		if d.Memory == nil {
			d.Memory = &v1.Memory{}
		}
		return d.Memory
	}
	set := func(list *k8sv1.ResourceList, s string) {
		if *list == nil {
			*list = k8sv1.ResourceList{}
		}
		(*list)[k8sv1.ResourceMemory] = q(s)
	}
	switch form {
	case "request":
		set(&d.Resources.Requests, size)
	case "guest":
		mem().Guest = qp(size)
	case "guest+request":
		mem().Guest = qp(size)
		set(&d.Resources.Requests, size)
	case "request+limit":
		set(&d.Resources.Requests, size)
		lim := size
		if !g.dedicated && g.p(0.5) {
			lim = "8Gi"
		}
		set(&d.Resources.Limits, lim)
	case "limit":
		set(&d.Resources.Limits, size)
	case "pages":
		// Default makes the page size the guest memory.
	}
	if page != "" {
		mem().Hugepages = &v1.Hugepages{PageSize: page}
		if g.p(0.3) {
			g.annotate(v1.MemfdMemoryBackend, "false")
		}
	}
	passthrough := false // NUMA passthrough (which turns memory hotplug off)
	if g.kv && g.dedicated && page != "" && g.p(0.5) {
		g.cpu().NUMA = &v1.NUMA{GuestMappingPassthrough: &v1.NUMAGuestMappingPassthrough{}}
		g.beyond(cpuPath.Child("numa", "guestMappingPassthrough"))
		passthrough = true
		if g.p(0.3) {
			// Realtime itself converts: the VMI is refused for its
			// passthrough alone (without the host's NUMA cells).
			g.cpu().Realtime = &v1.Realtime{Mask: g.realtimeMask()}
		}
	}
	if !passthrough && g.p(0.08) {
		guest := size // the guest memory Default derives
		if form == "pages" {
			guest = page
		}
		gq := q(guest)
		factor := int64(pick(g, 1, 2, 4))
		maxGuest := resource.NewQuantity(roundUp(gq.Value(), 2<<20)*factor, resource.BinarySI)
		mem().MaxGuest = maxGuest
	}
}

// realtimeMask draws a realtime vCPU mask that api.Validate accepts: none
// (every vCPU), one vCPU, a range, a range with an exclusion before or
// after it (KubeVirt's reading ignores the order), or an exclusion alone
// (no vCPU), within the VMI's vCPUs (realtime is drawn with dedicated
// CPUs only).
func (g *gen) realtimeMask() string {
	last := max(g.vcpus, 1) - 1
	switch pickW(g, weighted[string]{3, "all"}, weighted[string]{1, "one"}, weighted[string]{1, "range"},
		weighted[string]{1, "except"}, weighted[string]{1, "none"}) {
	case "one":
		return strconv.Itoa(g.n(0, int(last)))
	case "range":
		return fmt.Sprintf("%d-%d", g.n(0, int(last)), last)
	case "except":
		x := g.n(0, int(last))
		if g.p(0.5) {
			return fmt.Sprintf("^%d,0-%d", x, last)
		}
		return fmt.Sprintf("0-%d,^%d", last, x)
	case "none":
		return fmt.Sprintf("^%d", g.n(0, int(last)))
	}
	return ""
}

// roundUp rounds n up to a multiple of m.
func roundUp(n, m int64) int64 {
	return (n + m - 1) / m * m
}
