package hostplan

// Inputs are what the launcher gathered for a Request before the plan is
// made: the images it resolved and the files of the config sources it
// read. Make reads nothing else of the host.
type Inputs struct {
	// Images are the images resolved, by the String of their
	// ImageRequest.Field. An image missing here is taken from the layout's
	// folder for its reference (convert.HostLayout.ImageFolder), with a
	// disk of unknown format: what a conversion without an image store
	// gives, for tests and dry runs.
	Images map[string]Image
	// Sources are the files of each config source the launcher has a
	// folder for. A source the VMI reads that is missing here has no
	// folder on this host: a volume refuses it unless it is optional.
	Sources map[Source][]File
}

// Image is an image resolved on the host.
type Image struct {
	// Reference is the reference as the VMI writes it, Digest the digest
	// it resolved to.
	Reference, Digest string
	// Dir is the folder of the image's file system.
	Dir string
	// Disk is, for a containerDisk without a path, the path of its disk
	// inside the image (KubeVirt's one file under /disk/).
	Disk string
	// DiskFormat is the format of the containerDisk's disk, "raw" or
	// "qcow2"; empty when not probed (the launcher then probes it before
	// it makes the overlay).
	DiskFormat string
}

// File is one file of a config source: its path inside the source (slash
// separated) and its content.
type File struct {
	Path string
	Data []byte
}
