// Package cmdutil holds what the commands under examples/ share: the one
// line a VMI's status is printed as, a terminal attached to a VMI's serial
// console (raw mode, Ctrl-] detaches, as virsh and virtctl do), and the
// loopback-only listeners a VMI's VNC display is served on.
package cmdutil
