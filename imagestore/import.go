package imagestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Annotations by which an OCI layout names its images.
const (
	ociRefName       = "org.opencontainers.image.ref.name"
	containerdImgRef = "io.containerd.image.name"
)

// Import stores the linux/amd64 image of from under reference, without
// any registry, so that a host without network can be filled: from is
// an OCI image layout folder (index.json, blobs/) or a `docker save`
// tarball. A source holding several images must name the one wanted by
// reference (a layout by its org.opencontainers.image.ref.name or
// io.containerd.image.name annotation, a tarball by its RepoTags), unless
// they are the platforms of one image. Resolve then finds the image under
// reference with pull policy IfNotPresent or Never (Always asks the
// registry, which may not have it). Errors are *Error values.
func (s *Store) Import(ctx context.Context, reference, from string) (*Image, error) {
	ref, err := s.parseReference(reference)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(from)
	if err != nil {
		return nil, failure(reference, ErrNotFound, "import source", err)
	}
	var img v1.Image
	src := source{kind: "docker-archive"}
	if st.IsDir() {
		src = source{kind: "oci-layout", compressed: true}
		img, err = layoutImage(from, ref)
	} else {
		img, err = archiveImage(from, ref)
	}
	if err != nil {
		var pe *platformError
		if errors.As(err, &pe) {
			return nil, failure(reference, ErrWrongPlatform, from+": "+pe.Error(), nil)
		}
		return nil, failure(reference, ErrBadImage, from, err)
	}
	return s.install(ctx, reference, ref.Name(), img, src)
}

// layoutImage returns the image of an OCI layout that ref names.
func layoutImage(dir string, ref name.Reference) (v1.Image, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	cands := im.Manifests
	if len(cands) > 1 {
		var named []v1.Descriptor
		for _, d := range cands {
			if n := d.Annotations[ociRefName]; n != "" && (n == ref.Identifier() || n == ref.String() || n == ref.Name()) {
				named = append(named, d)
			} else if n := d.Annotations[containerdImgRef]; n != "" && (n == ref.String() || n == ref.Name()) {
				named = append(named, d)
			}
		}
		if len(named) == 0 {
			if !slices.ContainsFunc(cands, func(d v1.Descriptor) bool { return d.Platform != nil }) {
				return nil, fmt.Errorf("the layout holds %d images and names none %s", len(cands), ref)
			}
			// Several platforms of one image.
			return platformImage(idx)
		}
		cands = named
	}
	switch {
	case len(cands) == 0:
		return nil, errors.New("the layout holds no image")
	case len(cands) > 1:
		return nil, fmt.Errorf("the layout holds %d images named %s", len(cands), ref)
	case cands[0].MediaType.IsIndex():
		child, err := idx.ImageIndex(cands[0].Digest)
		if err != nil {
			return nil, err
		}
		return platformImage(child)
	case cands[0].MediaType.IsImage():
		if p := cands[0].Platform; p != nil && !p.Satisfies(platform) {
			return nil, &platformError{[]string{p.String()}}
		}
		return idx.Image(cands[0].Digest)
	}
	return nil, fmt.Errorf("manifest of media type %q is not a container image", cands[0].MediaType)
}

// archiveImage returns the image of a `docker save` tarball that ref
// names (the only one, or the one tagged so).
func archiveImage(file string, ref name.Reference) (v1.Image, error) {
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(file) })
	if err != nil {
		return nil, err
	}
	if len(m) == 1 {
		return tarball.ImageFromPath(file, nil)
	}
	tag, ok := ref.(name.Tag)
	if !ok {
		return nil, fmt.Errorf("the tarball holds %d images; a digest reference names none of them", len(m))
	}
	return tarball.ImageFromPath(file, &tag)
}
