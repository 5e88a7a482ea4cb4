package rootfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// deepFolder is the name of a folder entry depth folders deep.
func deepFolder(depth int) string { return strings.Repeat("a/", depth) }

// extract extracts the layers, top first, into a new folder, and returns
// the folder, the Extractor and the first error.
func extract(t testing.TB, layers ...[]byte) (string, *Extractor, error) {
	t.Helper()
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	x := New(root, 1<<20)
	for _, l := range layers {
		if err := x.Layer(bytes.NewReader(l)); err != nil {
			return dir, x, err
		}
	}
	return dir, x, x.Finish()
}

// components counts the folders and files that the entries' names name.
func components(entries []entry) int64 {
	var n int64
	for _, e := range entries {
		n += int64(strings.Count(strings.TrimSuffix(e.name, "/"), "/") + 1)
	}
	return n
}

// TestDeepFolders extracts folders as deep as maxDepth allows, one chain
// and 100 folders beside its deepest one, and bounds the lookups: making
// a folder costs the components of its entry's name, and setting its mode
// and syncing it three more, however deep it is. (Before, each folder was
// walked down from the top, and the chain's folders again for each folder
// made beside them: 6,697,216 lookups here, 25 s; a single chain 2,047
// deep, a 6.6 kB layer, took 4,196,351 lookups, 20 s.)
func TestDeepFolders(t *testing.T) {
	entries := []entry{dir(deepFolder(maxDepth))}
	for i := range 100 {
		entries = append(entries, dir(deepFolder(maxDepth-1)+"b"+strconv.Itoa(i)+"/"))
	}
	entries = append(entries, file(deepFolder(maxDepth-1)+"f", "deep"))
	dir, x, err := extract(t, tarOf(t, entries...))
	if err != nil {
		t.Fatal(err)
	}
	if want := maxDepth + 100; len(x.folders) != want {
		t.Errorf("%d folders made, want %d", len(x.folders), want)
	}
	if bound := components(entries) + 3*int64(len(x.folders)) + 1; x.steps > bound {
		t.Errorf("%d lookups for %d folders, want at most %d", x.steps, len(x.folders), bound)
	}
	for _, name := range []string{deepFolder(maxDepth), deepFolder(maxDepth-1) + "b99"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !st.IsDir() || st.Mode().Perm() != folderMode {
			t.Errorf("%s...: %v, %v; want a folder of mode %o", name[:20], st, err, folderMode)
		}
	}
	if got, err := os.ReadFile(filepath.Join(dir, deepFolder(maxDepth-1)+"f")); err != nil || string(got) != "deep" {
		t.Errorf("the deepest file holds %q, %v", got, err)
	}
}

// TestLimits extracts entries that break a limit of limits.go: each is
// refused as an *EntryError that names the limit (not a *WriteError, as
// Linux's refusal of a name too long for it would be), before any lookup
// in the folder.
func TestLimits(t *testing.T) {
	longest := strings.Repeat("c", maxName)
	for _, c := range []struct {
		name  string
		entry entry
		why   string
	}{
		// FuzzExtract's seed deep-folders: 20 s of lookups before the limit.
		{"folder 2,047 deep", dir(deepFolder(2047)), "name with more than 256 components"},
		{"file 257 deep", file(deepFolder(maxDepth)+"f", "x"), "name with more than 256 components"},
		{"name past NAME_MAX", file("disk/"+longest+"c", "x"), "name with a component of 256 bytes, longer than 255"},
		{"hard link past NAME_MAX", hardlink("h", longest+"c"), "hard link to a target with a component of 256 bytes, longer than 255"},
		{"symbolic link 257 deep", symlink("l", deepFolder(maxDepth)+"f"), "symbolic link to a target with more than 256 components"},
		{"absolute target too long once relative", symlink("x/l", "/"+strings.Repeat(longest+"/", 15)+longest[:maxName-2]),
			"is 4096 bytes, longer than 4095"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, x, err := extract(t, tarOf(t, c.entry))
			var ee *EntryError
			if !errors.As(err, &ee) || !strings.HasSuffix(err.Error(), c.why) {
				t.Fatalf("got %v, want an *EntryError ending %q", err, c.why)
			}
			if x.steps != 0 {
				t.Errorf("%d lookups before the refusal", x.steps)
			}
			if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
				t.Errorf("the folder holds %v, %v", entries, err)
			}
		})
	}
}

// BenchmarkDeepFolders extracts a chain of folders maxDepth deep with a
// file at the bottom, and reports the lookups it costs.
func BenchmarkDeepFolders(b *testing.B) {
	layer := tarOf(b, dir(deepFolder(maxDepth)), file(deepFolder(maxDepth-1)+"f", "deep"))
	var steps int64
	for b.Loop() {
		_, x, err := extract(b, layer)
		if err != nil {
			b.Fatal(err)
		}
		steps = x.steps
	}
	b.ReportMetric(float64(steps), "lookups/op")
}
