package hostplan

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

func TestSerialSocket(t *testing.T) {
	port := func(n uint) *libvirtxml.DomainSerialTarget { return &libvirtxml.DomainSerialTarget{Port: &n} }
	unix := func(p string) *libvirtxml.DomainChardevSource {
		return &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{Mode: "bind", Path: p}}
	}
	for _, c := range []struct {
		name    string
		serials []libvirtxml.DomainSerial
		want    string // socket, or "" for an error
		invalid bool   // the error is an *InvalidError at autoattachSerialConsole
	}{
		{name: "none", invalid: true},
		{name: "port 0", serials: []libvirtxml.DomainSerial{{Target: port(0), Source: unix("/s/serial0.sock")}}, want: "/s/serial0.sock"},
		{name: "no target: port 0", serials: []libvirtxml.DomainSerial{{Source: unix("/s/a.sock")}}, want: "/s/a.sock"},
		{name: "port 0 after port 1", serials: []libvirtxml.DomainSerial{
			{Target: port(1), Source: unix("/s/serial1.sock")}, {Target: port(0), Source: unix("/s/serial0.sock")}}, want: "/s/serial0.sock"},
		{name: "only port 1", serials: []libvirtxml.DomainSerial{{Target: port(1), Source: unix("/s/serial1.sock")}}, invalid: true},
		{name: "a pty", serials: []libvirtxml.DomainSerial{{Target: port(0), Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}}}}},
	} {
		d := &libvirtxml.Domain{Name: "ns_vmi", Devices: &libvirtxml.DomainDeviceList{Serials: c.serials}}
		got, err := SerialSocket(d)
		var fe *field.Error
		switch {
		case c.want != "" && (err != nil || got != c.want):
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		case c.want == "" && err == nil:
			t.Errorf("%s: %q, want an error", c.name, got)
		case c.invalid && (!errors.Is(err, pipeline.ErrInvalid) || !errors.As(err, &fe) || fe.Field != "spec.domain.devices.autoattachSerialConsole"):
			t.Errorf("%s: %v, want an *InvalidError at spec.domain.devices.autoattachSerialConsole", c.name, err)
		case !c.invalid && errors.Is(err, pipeline.ErrInvalid):
			t.Errorf("%s: %v, want an error that is not pipeline.ErrInvalid", c.name, err)
		}
	}
}

func TestVNCIndex(t *testing.T) {
	spice := libvirtxml.DomainGraphic{Spice: &libvirtxml.DomainGraphicSpice{}}
	vnc := libvirtxml.DomainGraphic{VNC: &libvirtxml.DomainGraphicVNC{}}
	if i, err := VNCIndex(&libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{Graphics: []libvirtxml.DomainGraphic{spice, vnc}}}); err != nil || i != 1 {
		t.Errorf("VNC after SPICE: index %d, %v; want 1", i, err)
	}
	var fe *field.Error
	for _, d := range []*libvirtxml.Domain{{}, {Devices: &libvirtxml.DomainDeviceList{Graphics: []libvirtxml.DomainGraphic{spice}}}} {
		if _, err := VNCIndex(d); !errors.Is(err, pipeline.ErrInvalid) || !errors.As(err, &fe) || fe.Field != "spec.domain.devices.autoattachGraphicsDevice" {
			t.Errorf("no VNC in %+v: %v, want an *InvalidError at spec.domain.devices.autoattachGraphicsDevice", d.Devices, err)
		}
	}
}
