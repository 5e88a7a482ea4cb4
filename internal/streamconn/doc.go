// Package streamconn holds the connections of a VMI's streams as the
// launcher hands them out: a Conn bound to a context (it closes when the
// context ends and says why), and the attachment to a serial console's
// unix socket, one at a time host-wide (a lock file beside the socket), a
// forced one taking the console over from an attachment of this process.
// It needs no libvirt.
package streamconn
