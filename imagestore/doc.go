// Package imagestore keeps the container images that KubeVirt VMIs name —
// a containerDisk's image, a kernelBoot container's image — on a plain
// host: pulled from OCI registries with go-containerregistry (or imported
// from an OCI layout or a `docker save` tarball on a host without network),
// for linux/amd64, and extracted into a folder per manifest digest.
//
// A Store resolves a Request (reference, pull policy, credentials) to an
// Image: Always, IfNotPresent and Never mean what they mean to KubeVirt and
// Kubernetes. What it writes is checked and atomic:
//
//   - every blob is checked against its digest and size (layers also
//     against the diff IDs of the verified config): ErrDigestMismatch;
//   - layers are flattened as a container runtime does (whiteouts, opaque
//     folders), through an os.Root, refusing what could reach outside the
//     image: paths with "..", absolute paths, symbolic or hard links leading
//     out, device files, names and link targets beyond Linux's limits
//     (4096 bytes, 255 a component) or more than 256 components deep
//     (ErrBadImage), and more than Config.MaxImageSize bytes or 1,048,576
//     tar entries (ErrTooLarge);
//   - an image is extracted into a temporary folder and renamed into place
//     whole, so a pull cut off leaves nothing that looks complete, and the
//     store is unchanged by a failed pull;
//   - one pull serves every goroutine asking for the same reference or
//     digest at once; processes sharing a folder each pull, and the first
//     to finish publishes (the others' copies are dropped);
//   - plain HTTP only for loopback registries and those the Config names.
//
// What KubeVirt finds in the image: Image.DiskPath is a containerDisk's
// disk (its path, or the one file under /disk/), Image.HostPath a
// kernel-boot kernelPath or initrdPath on the host.
//
// Errors are *Error values naming the image, with a Kind to branch on with
// errors.Is (ErrNotFound, ErrUnauthorized, ErrWrongPlatform, ...), and
// Retryable telling "retry later" from "permanent".
package imagestore
