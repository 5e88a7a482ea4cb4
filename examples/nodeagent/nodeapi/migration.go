package nodeapi

// Annotations a node agent writes on its Node so that the agent of a VMI
// migrating to it can reach the node's libvirt host: the target launcher
// of a migration is made from them (its owner is the Node's name).
const (
	// LibvirtURIAnnotation is the node's libvirt connection URI.
	LibvirtURIAnnotation = "vmi2libvirt.io/libvirt-uri"
	// StateDirAnnotation is the folder of the node's VMI state folders.
	StateDirAnnotation = "vmi2libvirt.io/state-dir"
)
