// Package rfb is a small client of RFB, the VNC protocol (RFC 6143), for
// the project's tests: the RFB 3.8 handshake with security type None, as
// QEMU offers it on a socket or to a client libvirt hands it, and a full
// framebuffer update in raw encoding.
package rfb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Version is the protocol version the client speaks.
const Version = "RFB 003.008\n"

// ServerInit is what the server says of its framebuffer after the
// handshake.
type ServerInit struct {
	Width, Height uint16
	BitsPerPixel  uint8
	Depth         uint8
	TrueColour    bool
	Name          string
}

// Handshake runs the client's side of the handshake on rw: the version
// exchange (the server must offer 3.8), security type None, and
// ClientInit with the shared flag (false asks the server for exclusive
// access); it returns the server's ServerInit.
func Handshake(rw io.ReadWriter, shared bool) (ServerInit, error) {
	var si ServerInit
	ver := make([]byte, len(Version))
	if _, err := io.ReadFull(rw, ver); err != nil {
		return si, fmt.Errorf("rfb: read the server's version: %w", err)
	}
	if string(ver) != Version {
		return si, fmt.Errorf("rfb: server version %q, want %q", ver, Version)
	}
	if _, err := io.WriteString(rw, Version); err != nil {
		return si, err
	}
	var n [1]byte
	if _, err := io.ReadFull(rw, n[:]); err != nil {
		return si, fmt.Errorf("rfb: read the security types: %w", err)
	}
	if n[0] == 0 {
		return si, fmt.Errorf("rfb: server refused the connection: %s", readReason(rw))
	}
	types := make([]byte, n[0])
	if _, err := io.ReadFull(rw, types); err != nil {
		return si, fmt.Errorf("rfb: read the security types: %w", err)
	}
	if !bytes.Contains(types, []byte{1}) {
		return si, fmt.Errorf("rfb: server offers security types %v, not None (1)", types)
	}
	if _, err := rw.Write([]byte{1}); err != nil {
		return si, err
	}
	var result uint32
	if err := binary.Read(rw, binary.BigEndian, &result); err != nil {
		return si, fmt.Errorf("rfb: read the security result: %w", err)
	}
	if result != 0 {
		return si, fmt.Errorf("rfb: security handshake failed: %s", readReason(rw))
	}
	flag := byte(0)
	if shared {
		flag = 1
	}
	if _, err := rw.Write([]byte{flag}); err != nil {
		return si, err
	}
	var head [24]byte
	if _, err := io.ReadFull(rw, head[:]); err != nil {
		return si, fmt.Errorf("rfb: read ServerInit: %w", err)
	}
	si.Width = binary.BigEndian.Uint16(head[0:])
	si.Height = binary.BigEndian.Uint16(head[2:])
	si.BitsPerPixel, si.Depth, si.TrueColour = head[4], head[5], head[7] != 0
	nameLen := binary.BigEndian.Uint32(head[20:])
	if nameLen > 1<<16 {
		return si, fmt.Errorf("rfb: ServerInit name of %d bytes", nameLen)
	}
	name := make([]byte, nameLen)
	if _, err := io.ReadFull(rw, name); err != nil {
		return si, fmt.Errorf("rfb: read ServerInit's name: %w", err)
	}
	si.Name = string(name)
	return si, nil
}

// readReason reads a failure reason (a length and a string).
func readReason(r io.Reader) string {
	var n uint32
	if err := binary.Read(r, binary.BigEndian, &n); err != nil || n > 1<<16 {
		return "(no reason)"
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "(no reason)"
	}
	return string(b)
}

// Rect is one rectangle of a framebuffer update.
type Rect struct {
	X, Y, Width, Height uint16
	// Pixels are its pixels, raw, in the server's pixel format.
	Pixels []byte
}

// Framebuffer asks for the whole framebuffer of si (SetEncodings raw, then
// a non-incremental FramebufferUpdateRequest) and reads updates until
// their rectangles cover it; Bell and ServerCutText messages met on the
// way are skipped.
func Framebuffer(rw io.ReadWriter, si ServerInit) ([]Rect, error) {
	// SetEncodings: message 2, padding, one encoding, Raw (0).
	if _, err := rw.Write([]byte{2, 0, 0, 1, 0, 0, 0, 0}); err != nil {
		return nil, err
	}
	req := []byte{3, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(req[6:], si.Width)
	binary.BigEndian.PutUint16(req[8:], si.Height)
	if _, err := rw.Write(req); err != nil {
		return nil, err
	}
	bpp := int(si.BitsPerPixel) / 8
	if bpp == 0 {
		return nil, errors.New("rfb: server pixel format of 0 bits")
	}
	want := int(si.Width) * int(si.Height)
	var rects []Rect
	covered := 0
	for covered < want {
		var typ [1]byte
		if _, err := io.ReadFull(rw, typ[:]); err != nil {
			return rects, fmt.Errorf("rfb: read a server message: %w", err)
		}
		switch typ[0] {
		case 0: // FramebufferUpdate
			var head [3]byte
			if _, err := io.ReadFull(rw, head[:]); err != nil {
				return rects, err
			}
			for i := 0; i < int(binary.BigEndian.Uint16(head[1:])); i++ {
				var rh [12]byte
				if _, err := io.ReadFull(rw, rh[:]); err != nil {
					return rects, err
				}
				r := Rect{X: binary.BigEndian.Uint16(rh[0:]), Y: binary.BigEndian.Uint16(rh[2:]),
					Width: binary.BigEndian.Uint16(rh[4:]), Height: binary.BigEndian.Uint16(rh[6:])}
				if enc := int32(binary.BigEndian.Uint32(rh[8:])); enc != 0 {
					return rects, fmt.Errorf("rfb: rectangle in encoding %d, asked for raw (0)", enc)
				}
				if int(r.X)+int(r.Width) > int(si.Width) || int(r.Y)+int(r.Height) > int(si.Height) {
					return rects, fmt.Errorf("rfb: rectangle %dx%d at %d,%d outside the %dx%d framebuffer", r.Width, r.Height, r.X, r.Y, si.Width, si.Height)
				}
				r.Pixels = make([]byte, int(r.Width)*int(r.Height)*bpp)
				if _, err := io.ReadFull(rw, r.Pixels); err != nil {
					return rects, fmt.Errorf("rfb: read pixels: %w", err)
				}
				rects = append(rects, r)
				covered += int(r.Width) * int(r.Height)
			}
		case 2: // Bell
		case 3: // ServerCutText
			var head [7]byte
			if _, err := io.ReadFull(rw, head[:]); err != nil {
				return rects, err
			}
			if _, err := io.CopyN(io.Discard, rw, int64(binary.BigEndian.Uint32(head[3:]))); err != nil {
				return rects, err
			}
		default:
			return rects, fmt.Errorf("rfb: unexpected server message type %d", typ[0])
		}
	}
	return rects, nil
}
