// Package e2e holds the properties of generated VMIs (package
// testkit/vmigen) that need the host: their domains defined and undefined
// on the real libvirtd (TestDefine, libvirt.org/go/libvirt directly, with
// the VALIDATE flag), and random specs within what the test guest reports
// booted under emulation through the launcher's public API, each report
// checked against its spec (TestBoot). Without libvirtd or the test
// guest's pieces the tests skip, and fail under CI. It has no code but its
// tests.
//
//	go test ./testkit/vmigen/e2e -v
package e2e
