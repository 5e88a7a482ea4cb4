package vmigen_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/internal/vcpumask"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/golden"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/vmigen"
)

// oneCell is a host of one NUMA cell holding the CPUs of both layouts'
// CPU sets (0-7).
var oneCell = []convert.NUMACell{{ID: 0, MemoryKiB: 16 << 20, CPUs: []convert.NUMACPU{
	{ID: 0, Siblings: []uint{0}}, {ID: 1, Siblings: []uint{1}}, {ID: 2, Siblings: []uint{2}}, {ID: 3, Siblings: []uint{3}},
	{ID: 4, Siblings: []uint{4}}, {ID: 5, Siblings: []uint{5}}, {ID: 6, Siblings: []uint{6}}, {ID: 7, Siblings: []uint{7}},
}, Distances: map[uint]uint{0: 10}}}

// TestPassthroughWithHostCells converts the KubeVirt profile's VMIs with
// NUMA guest mapping passthrough, realtime among them, with the host's
// NUMA cells given (Options.HostFacts.NUMA, which no profile gives): the
// passthrough is then no longer refusable, and checkCase's properties
// hold; a realtime VMI's domain has the PMU off, <nosharepages/> and one
// <vcpusched> for each vCPU its mask names, as KubeVirt's handler reads
// the mask. Every domain passes libvirt's schema.
func TestPassthroughWithHostCells(t *testing.T) {
	passthrough := "spec.domain.cpu.numa.guestMappingPassthrough"
	converted, realtime := 0, 0
	var files []string
	dir := t.TempDir()
	for _, layout := range []vmigen.Layout{vmigen.KubeVirtLayout, vmigen.HostLayout} {
		cfg := vmigen.Config{Seed: 1, Profile: vmigen.KubeVirt, Layout: layout}
		for i := range propertyCount() {
			c := vmigen.Generate(cfg, i)
			if !slices.Contains(c.Refusable, passthrough) {
				continue
			}
			c.Refusable = slices.DeleteFunc(slices.Clone(c.Refusable), func(p string) bool { return p == passthrough })
			c.Options.HostFacts.NUMA = oneCell
			xml, errs := checkCase(t, c)
			if xml == nil || len(errs) > 0 {
				continue // refused elsewhere, as allowed, or failed (reported)
			}
			converted++
			if len(c.NewerForms) == 0 {
				file := filepath.Join(dir, fmt.Sprintf("%s-%05d.xml", layout, i))
				if err := os.WriteFile(file, xml, 0o644); err != nil {
					t.Fatal(err)
				}
				files = append(files, file)
			}
			rt := c.VMI.Spec.Domain.CPU.Realtime
			if rt == nil {
				continue
			}
			realtime++
			mask, err := vcpumask.Parse(rt.Mask)
			if err != nil {
				t.Errorf("%s: mask %q: %v", c.VMI.Name, rt.Mask, err)
				continue
			}
			var want []string
			for id := range uint64(64) {
				if bytes.Contains(xml, fmt.Appendf(nil, `<vcpupin vcpu="%d" `, id)) && mask.Names(id) {
					want = append(want, fmt.Sprintf(`<vcpusched vcpus="%d" scheduler="fifo" priority="1">`, id))
				}
			}
			if n := bytes.Count(xml, []byte("<vcpusched ")); n != len(want) {
				t.Errorf("%s: mask %q: %d <vcpusched>, want %d", c.VMI.Name, rt.Mask, n, len(want))
			}
			for _, w := range append(want, `<pmu state="off">`, `<nosharepages>`) {
				if !strings.Contains(string(xml), w) {
					t.Errorf("%s: mask %q: the domain lacks %s", c.VMI.Name, rt.Mask, w)
				}
			}
		}
	}
	golden.CheckSchemaFiles(t, files)
	t.Logf("%d VMIs with passthrough converted with the host's cells, %d of them realtime", converted, realtime)
	if converted == 0 || realtime == 0 {
		t.Errorf("%d passthrough VMIs converted, %d realtime: the KubeVirt profile should draw both", converted, realtime)
	}
}
