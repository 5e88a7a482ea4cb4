package domain_test

import (
	"strings"
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// sampleDomains converts every sample of examples/vmis once.
func sampleDomains(b *testing.B) (names []string, domains []*libvirtxml.Domain) {
	b.Helper()
	for _, c := range converterCases(b) {
		if name, ok := strings.CutPrefix(c.name, "examples/"); ok {
			names = append(names, strings.TrimSuffix(name, ".yaml"))
			domains = append(domains, convertCase(b, c))
		}
	}
	return names, domains
}

// BenchmarkMarshal measures Marshal (the generated writer) per sample.
func BenchmarkMarshal(b *testing.B) {
	names, domains := sampleDomains(b)
	for i, d := range domains {
		b.Run(names[i], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := domain.Marshal(d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMarshalLibvirtxml measures what Marshal falls back to,
// libvirtxml's Marshal, on the same domains, for comparison.
func BenchmarkMarshalLibvirtxml(b *testing.B) {
	names, domains := sampleDomains(b)
	for i, d := range domains {
		b.Run(names[i], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := domain.LibvirtxmlMarshal(d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
