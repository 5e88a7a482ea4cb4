package api

import (
	"testing"
)

// BenchmarkPipeline measures Decode, Default and Validate of each testdata
// VMI, the work done per VMI before conversion.
func BenchmarkPipeline(b *testing.B) {
	for _, name := range []string{"vmi-small.yaml", "vm-server.yaml", "vmi-windows.yaml"} {
		data := readTestdata(b, name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				vmi, err := Decode(data)
				if err != nil {
					b.Fatal(err)
				}
				Default(vmi, ClusterConfig{})
				if errs := Validate(vmi); len(errs) > 0 {
					b.Fatal(errs)
				}
			}
		})
	}
}

// BenchmarkDecode measures Decode alone on YAML and on JSON input.
func BenchmarkDecode(b *testing.B) {
	data := readTestdata(b, "vmi-windows.yaml")
	b.Run("yaml", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	vmi, _ := Decode(data)
	js, err := jsonMarshal(vmi)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(js); err != nil {
				b.Fatal(err)
			}
		}
	})
}
