package domain

// WriteDomain and LibvirtxmlMarshal are the two ways Marshal can take, for
// the differential tests of the writer.
var (
	WriteDomain       = writeDomain
	LibvirtxmlMarshal = libvirtxmlMarshal
)
