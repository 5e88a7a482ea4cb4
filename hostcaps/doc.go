// Package hostcaps turns what libvirt says of a host into the converter's
// host facts (convert.HostFacts): the XML of its capabilities (virsh
// capabilities) and of its domain capabilities for the machine type and
// domain type in use (virsh domcapabilities), QEMU's firmware descriptors
// (/usr/share/qemu/firmware/*.json), which throwaway domains libvirt
// refused to define (Probes: the forms of KubeVirt's domain a libvirt
// version may lack) and which programs are installed (swtpm, passt).
//
// It is pure: the launcher reads the documents (once per connection) and
// passes them in as Documents; Facts reads nothing itself. So the facts of
// any host can be computed, and tested, from captured documents
// (testdata/).
package hostcaps
