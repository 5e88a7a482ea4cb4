package imagestore

import (
	"sync/atomic"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Progress is how far a pull from a registry has come.
type Progress struct {
	// Image is the reference being pulled, as the caller wrote it.
	Image string
	// Digest is the image manifest's digest.
	Digest string
	// Done and Total count the bytes of the config and layers as the
	// registry stores them (compressed).
	Done, Total int64
	// Finished is set on the last report of a pull, when it has ended
	// (successfully or not).
	Finished bool
}

// reportProgress reports a pull's progress to Config.Progress every
// interval until the returned stop is called; stop sends a last report
// when any was sent. Without Config.Progress it does nothing.
func (s *Store) reportProgress(image string, d v1.Hash, total int64, done *atomic.Int64) (stop func()) {
	if s.progress == nil {
		return func() {}
	}
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(s.interval)
		defer t.Stop()
		reported := false
		for {
			select {
			case <-t.C:
				reported = true
				s.progress(Progress{Image: image, Digest: d.String(), Done: done.Load(), Total: total})
			case <-quit:
				if reported {
					s.progress(Progress{Image: image, Digest: d.String(), Done: done.Load(), Total: total, Finished: true})
				}
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-exited
	}
}
