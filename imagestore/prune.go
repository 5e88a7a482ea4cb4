package imagestore

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Prune removes every image for which keep(digest) is false, and the
// records of references that named them, and returns the digests removed,
// sorted. It holds the store's lock exclusively while it takes images out
// of view, so an image being looked up or published at that moment is
// either kept whole or removed before anyone is handed it; pulls in
// progress are not touched. An image a caller was handed earlier is
// removed unless keep says otherwise: keep must report every image in use
// (e.g. the digests of the images the defined domains use) and every image
// a caller is about to use.
func (s *Store) Prune(ctx context.Context, keep func(digest string) bool) ([]string, error) {
	var removed, trash []string
	err := s.withLock(true, func() error {
		entries, err := os.ReadDir(s.path("sha256"))
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := ctx.Err(); err != nil {
				return err
			}
			d := v1.Hash{Algorithm: "sha256", Hex: e.Name()}
			if keep(d.String()) {
				continue
			}
			dst, err := os.MkdirTemp(s.path(".tmp"), "prune-")
			if err != nil {
				return err
			}
			if err := os.Rename(s.imageFolder(d), filepath.Join(dst, "image")); err != nil {
				return err
			}
			removed = append(removed, d.String())
			trash = append(trash, dst)
		}
		return s.dropRefs(removed)
	})
	for _, t := range trash {
		_ = os.RemoveAll(t)
	}
	slices.Sort(removed)
	return removed, err
}

// dropRefs removes the reference records that name one of the digests.
func (s *Store) dropRefs(digests []string) error {
	if len(digests) == 0 {
		return nil
	}
	dir := s.path(".refs")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var r refRecord
		if json.Unmarshal(data, &r) == nil && slices.Contains(digests, r.Digest) {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	return nil
}
