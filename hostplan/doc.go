// Package hostplan computes the complete plan of one VirtualMachineInstance
// on one libvirt host, as data, and reads libvirt's state of a domain back
// into a VMI status: the launcher's decisions, made by pure functions. It
// reads no file, calls no libvirt and no clock (the caller passes the time
// where a status needs it), and builds with CGO_ENABLED=0, so that a plan
// can be made, compared and tested without a host.
//
// The launcher (package launcher) uses it in three steps, as
// go-containerregistry keeps its pure mutate apart from its remote I/O:
//
//	req, err := hostplan.Prepare(vmi, host)  // KubeVirt's defaults and validation; what to gather
//	in := ...                                // the launcher resolves req.Images and reads req.Sources
//	plan, err := hostplan.Make(req, host, in) // the domain XML with its marks, every artifact
//	...                                      // the launcher checks and makes the artifacts, defines, starts
//
// Host says who owns the domains and how VMIs are placed and converted on
// the host (its convert.Options, the facts the launcher probed included).
// A Plan holds the exact domain XML, its metadata marks included (Marks:
// the owner, the VMI, the hash of the converted domain, the images and
// their digests; the schema of what a launcher records in a domain), and
// every Artifact with its contents and mode: the state folder and its
// sub-folders, cloud-init and config ISOs (their bytes), empty disks,
// qcow2 overlays, hostDisks, and the files the plan only checks (a
// kernel-boot image's kernel and initrd). A VMI refused by Prepare or Make
// has nothing written for it.
//
// Snapshot, Judge and Status turn what libvirt says of a domain (state,
// reason, live definition, marks, what the guest agent knows) into
// KubeVirt's VirtualMachineInstanceStatus.
package hostplan
