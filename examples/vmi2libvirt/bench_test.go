package main

import (
	"strings"
	"testing"
)

// BenchmarkSplitDocuments splits a stream of 1000 documents (about 200 kB:
// the stream of validate's tests, repeated).
func BenchmarkSplitDocuments(b *testing.B) {
	stream := []byte(strings.Repeat(invalidStream+"---\n", 250))
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		if docs := splitDocuments("f", stream); len(docs) != 1000 {
			b.Fatalf("%d documents", len(docs))
		}
	}
}

// BenchmarkFieldLine finds the line of a field of a VirtualMachine, as
// done once per problem reported.
func BenchmarkFieldLine(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if fieldLine([]byte(located), "spec.template.spec.domain.devices.disks[1].disk.bus") != 17 {
			b.Fatal("wrong line")
		}
	}
}
