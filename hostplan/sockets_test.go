package hostplan

import (
	"strings"
	"testing"

	"libvirt.org/go/libvirtxml"
)

func TestSocketPathErrors(t *testing.T) {
	dom := func(serial, vnc string) *libvirtxml.Domain {
		return &libvirtxml.Domain{Name: "ns_vm", Devices: &libvirtxml.DomainDeviceList{
			Serials: []libvirtxml.DomainSerial{{Source: &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{Mode: "bind", Path: serial}}}},
			// The guest agent's channel has no path (libvirt picks one);
			// the downward metrics channel is checked.
			Channels: []libvirtxml.DomainChannel{
				{Source: &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{}}},
				{Source: &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{Mode: "bind", Path: serial}}},
			},
			Graphics: []libvirtxml.DomainGraphic{{VNC: &libvirtxml.DomainGraphicVNC{Listeners: []libvirtxml.DomainGraphicListener{
				{Socket: &libvirtxml.DomainGraphicListenerSocket{Socket: vnc}}}}}},
		}}
	}
	fits := "/" + strings.Repeat("s", MaxSocketPath-1)
	long := fits + "x"
	if errs := socketPathErrors(dom(fits, fits), "vm"); len(errs) != 0 {
		t.Errorf("paths of %d bytes refused: %v", len(fits), errs)
	}
	errs := socketPathErrors(dom(long, long), "vm")
	if len(errs) != 3 {
		t.Fatalf("%d errors for three paths of %d bytes: %v", len(errs), len(long), errs)
	}
	for i, what := range []string{"serial console", "downward metrics", "VNC"} {
		if errs[i].Field != "metadata.name" || errs[i].BadValue != "vm" || !strings.Contains(errs[i].Detail, "the "+what+" socket "+long+" is 108 bytes long, more than the 107") {
			t.Errorf("error %d: %v", i, errs[i])
		}
	}
}
