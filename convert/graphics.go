package convert

import "libvirt.org/go/libvirtxml"

// KubeVirt's video defaults.
const (
	videoHeads = 1
	videoVRAM  = 16384 // KiB
)

// graphics adds a VNC server listening on the Layout's VNC socket and the
// video device behind it, as KubeVirt does on amd64: spec.domain.devices.video
// when set, else bochs for EFI guests (when Options.BochsForEFIGuests) and
// VGA for the others. autoattachGraphicsDevice false leaves both out
// (api.Validate refuses a video device then). The video types are
// vocab.VideoTypes, written as they are.
func (c *converter) graphics(d *libvirtxml.Domain) error {
	devs := &c.spec.Domain.Devices
	if switchedOff(devs.AutoattachGraphicsDevice) {
		return nil
	}
	p := c.parts
	p.vncSocket.Socket = c.paths.VNCSocket
	p.vncListeners[0].Socket = &p.vncSocket
	p.vnc.Listeners = p.vncListeners[:]
	p.graphics[0].VNC = &p.vnc
	d.Devices.Graphics = p.graphics[:]

	model := libvirtxml.DomainVideoModel{Type: "vga", Heads: videoHeads, VRam: videoVRAM}
	switch {
	case devs.Video != nil && devs.Video.Type != "":
		model.Type = devs.Video.Type
	case c.opts.BochsForEFIGuests && c.vmi.IsBootloaderEFI():
		model = libvirtxml.DomainVideoModel{Type: "bochs", Heads: videoHeads}
	}
	p.videos[0].Model = model
	d.Devices.Videos = p.videos[:]
	return nil
}
