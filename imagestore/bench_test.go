package imagestore

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// benchDiskSize is the size of the benchmarks' containerDisk.
const benchDiskSize = 256 << 20

// BenchmarkPullContainerDisk pulls and extracts a 256 MiB containerDisk
// (half pseudo-random data, half runs of zeros, gzip-compressed) from the
// loopback registry into a fresh store each time: bytes/s of disk.
// Compare with BenchmarkCopyDisk, a plain cp of the same file on this
// disk.
func BenchmarkPullContainerDisk(b *testing.B) {
	disk := diskBytes(13, benchDiskSize)
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if _, err := zw.Write(tarOf(b, file("disk/disk.img", disk))); err != nil {
		b.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(gz.Bytes())), nil })
	if err != nil {
		b.Fatal(err)
	}
	reg := newRegistry(b)
	ref, _ := reg.push(b, "disks/bench:1", imageOf(b, layer))
	base := b.TempDir()
	b.SetBytes(benchDiskSize)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s, err := New(Config{Root: filepath.Join(base, "store", string(rune('a'+i%26)))})
		if err != nil {
			b.Fatal(err)
		}
		img, err := s.Resolve(context.Background(), Request{Reference: ref})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if st, err := os.Stat(filepath.Join(img.Dir, "disk/disk.img")); err != nil || st.Size() != benchDiskSize {
			b.Fatalf("disk: %v, %v", st, err)
		}
		if err := os.RemoveAll(s.root); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkCopyDisk copies the benchmark's disk file with cp (cp+fsync:
// and flushes it to disk, as the store does), for comparison.
func BenchmarkCopyDisk(b *testing.B) {
	if _, err := exec.LookPath("cp"); err != nil {
		b.Skip("no cp")
	}
	dir := b.TempDir()
	src := filepath.Join(dir, "src.img")
	if err := os.WriteFile(src, []byte(diskBytes(13, benchDiskSize)), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		sync bool
	}{{"cp", false}, {"cp+fsync", true}} {
		b.Run(c.name, func(b *testing.B) {
			dst := filepath.Join(dir, "dst.img")
			b.SetBytes(benchDiskSize)
			for range b.N {
				if out, err := exec.Command("cp", src, dst).CombinedOutput(); err != nil {
					b.Fatalf("cp: %v: %s", err, out)
				}
				if c.sync {
					if err := syncPath(dst); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if err := os.Remove(dst); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
