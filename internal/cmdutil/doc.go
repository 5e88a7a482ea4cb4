// Package cmdutil holds what the commands under examples/ share: the one
// line a VMI's status is printed as, a terminal attached to a VMI's serial
// console (raw mode, Ctrl-] detaches, as virsh and virtctl do), the
// loopback-only listeners a VMI's VNC display is served on, and the logger
// of a launcher's warnings and steps.
package cmdutil
