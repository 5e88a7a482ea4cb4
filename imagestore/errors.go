package imagestore

import (
	"errors"
	"strings"
)

// Conditions a caller can branch on with errors.Is. Every error the Store
// returns for an image is an *Error whose Kind is one of them; Retryable
// says which ones may pass by themselves.
var (
	// ErrBadReference: the image reference does not parse. Permanent.
	ErrBadReference = errors.New("invalid image reference")
	// ErrBadPullPolicy: the pull policy is none of Always, IfNotPresent,
	// Never (or empty). Permanent.
	ErrBadPullPolicy = errors.New("invalid pull policy")
	// ErrNotPresent: the pull policy is Never and the store does not hold
	// the reference. Permanent until the image is imported or pulled.
	ErrNotPresent = errors.New("not in the image store and the pull policy is Never")
	// ErrNotFound: the registry has no such repository, tag or digest (or
	// an import's source does not exist). Permanent until someone pushes it.
	ErrNotFound = errors.New("not found in its registry")
	// ErrUnauthorized: the registry refused the credentials (or their
	// absence). Permanent until the credentials change.
	ErrUnauthorized = errors.New("the registry refused access")
	// ErrPlainHTTP: reaching the registry needed plain HTTP, which is
	// allowed only for loopback registries and Config.PlainHTTPRegistries.
	// Permanent until the configuration changes.
	ErrPlainHTTP = errors.New("plain HTTP refused for a registry that is not loopback nor in Config.PlainHTTPRegistries")
	// ErrUnavailable: the registry could not be reached or failed (network
	// error, connection cut, HTTP 429 or 5xx, the context ended). Retrying
	// later can help.
	ErrUnavailable = errors.New("registry unavailable")
	// ErrDigestMismatch: content did not match the digest or size that names
	// it (a manifest, the config or a layer). Retrying can help when a proxy
	// or the network corrupted it.
	ErrDigestMismatch = errors.New("content does not match its digest")
	// ErrWrongPlatform: the reference names no linux/amd64 image. Permanent.
	ErrWrongPlatform = errors.New("no linux/amd64 image")
	// ErrBadImage: not a container image, or a layer that is not a tar, is
	// truncated, or holds an entry that cannot be extracted safely (a path
	// with "..", an absolute path, a symbolic or hard link leading out of
	// the image, a device file). Permanent.
	ErrBadImage = errors.New("invalid image")
	// ErrTooLarge: the image's files add up to more than
	// Config.MaxImageSize. Permanent until the limit changes.
	ErrTooLarge = errors.New("image larger than the store's limit")
	// ErrStorage: writing or reading the store's own folder failed (disk
	// full, permissions...). Retrying later can help.
	ErrStorage = errors.New("image store failed")
	// ErrNoDisk: a containerDisk image has no disk where KubeVirt looks for
	// it: not exactly one file under /disk/, or its path names no file.
	// Permanent.
	ErrNoDisk = errors.New("no containerDisk disk file")
	// ErrNoFile: a kernel-boot path (kernelPath, initrdPath) names no
	// regular file of the image. Permanent.
	ErrNoFile = errors.New("no such file in the image")
)

// Error is what the Store returns for one image: which image, what went
// wrong (Kind, one of the Err* conditions) and why.
type Error struct {
	// Image is the reference as the caller gave it (or the source of an
	// import).
	Image string
	// Digest is the image manifest's digest, when it was known.
	Digest string
	// Kind is one of the Err* conditions.
	Kind error
	// Detail says what was wrong, e.g. the tar entry that was refused.
	Detail string
	// Err is the underlying cause, if any (a network error, the
	// context's error...).
	Err error
}

// Error reads "image REF: KIND: DETAIL: CAUSE".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("image ")
	b.WriteString(e.Image)
	if e.Digest != "" {
		b.WriteString(" (" + e.Digest + ")")
	}
	b.WriteString(": ")
	b.WriteString(e.Kind.Error())
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns Kind and the cause, so that errors.Is matches both (e.g.
// ErrUnavailable and context.DeadlineExceeded).
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// Retryable reports whether err is a condition that may pass by itself
// (ErrUnavailable, ErrDigestMismatch, ErrStorage), so that a caller retries
// later rather than reporting a permanent failure.
func Retryable(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrDigestMismatch) || errors.Is(err, ErrStorage)
}

// failure builds the *Error for one image.
func failure(image string, kind error, detail string, cause error) *Error {
	return &Error{Image: image, Kind: kind, Detail: detail, Err: cause}
}
