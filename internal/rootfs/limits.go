package rootfs

import (
	"fmt"
	"strings"
)

// Limits on the entries of layers. Each is refused with an error that
// names it; together they keep the work of extracting layers proportional
// to their size: every path handed to the os.Root costs one lookup per
// component, and no entry has more components than maxDepth or more bytes
// than maxPath.
const (
	// maxPath bounds the length of an entry's name and a link's target, as
	// Linux's PATH_MAX does (a longer target could not be written, a
	// longer name not opened by most programs), so that names a megabyte
	// long cost no time.
	maxPath = 4096
	// maxName bounds each component of a name, as Linux's NAME_MAX does: a
	// longer one could not be created, and the failure would look like
	// one of the host's disk rather than of the image.
	maxName = 255
	// maxDepth bounds how many components an entry's name or a symbolic
	// link's target has, so that what checking a link costs stays near
	// what its entry costs: the os.Root follows up to 8 links and
	// restarts at up to 8 "..", each walk as deep as a folder can be (a
	// link crafted so into folders 255 deep takes about 3 ms to check, on
	// the host where an empty file's sync takes 1.7 ms). It also bounds
	// the folders that Finish holds open at once. No real image nests
	// 256 deep.
	maxDepth = 256
	// maxEntries bounds how many tar entries the layers may have, so that
	// an image of millions of empty files cannot exhaust the host's
	// inodes.
	maxEntries = 1 << 20
)

// checkComponents returns why a name or link target (split at "/") breaks
// maxName or maxDepth, or "" if it breaks neither. Empty and "."
// components, which name no folder, do not count.
func checkComponents(p string) string {
	depth := 0
	for c := range strings.SplitSeq(p, "/") {
		switch {
		case c == "" || c == ".":
			continue
		case len(c) > maxName:
			return fmt.Sprintf("a component of %d bytes, longer than %d", len(c), maxName)
		}
		if depth++; depth > maxDepth {
			return fmt.Sprintf("more than %d components", maxDepth)
		}
	}
	return ""
}
