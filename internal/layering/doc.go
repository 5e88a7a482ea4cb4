// Package layering holds no code: its test checks the module's import
// rules, the ones DESIGN.md states and the package table of the README
// describes. The pure packages read no file and call no libvirt; no
// package but the launcher (and the programs on it) needs cgo; product
// code imports no test kit; and the node agent's module imports no
// internal/ package of the library.
package layering
