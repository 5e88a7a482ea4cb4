package launcher

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"time"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// metadataNS is the XML namespace of the launcher's element in a domain's
// <metadata>: <vmi2libvirt:sync><hash>…</hash></vmi2libvirt:sync>, the
// SHA-256 of the canonical XML the domain was defined from.
const metadataNS = "https://github.com/vmi2libvirt/vmi2libvirt/launcher"

// Sync makes libvirt run vmi as its spec says. It is idempotent: it
// defaults (on a copy) and validates the VMI, prepares its host artifacts,
// converts it for this host, defines the domain — or leaves an identical
// definition alone —, starts it unless it already ran to its end (paused
// when spec.startStrategy is Paused), and resumes a domain paused for a
// reason other than the user. The VMI becomes managed: its status changes
// are delivered to Watch.
//
// A VMI that api.Validate refuses is an *InvalidError (errors.As finds each
// *field.Error); a VMI the converter cannot honour is refused with the
// converter's *field.Error; libvirt's errors are wrapped as *libvirt.Error.
// A Sync that a Delete of the same VMI overtook returns ErrDeleted (see
// Delete).
func (l *Launcher) Sync(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	if vmi == nil {
		return errors.New("launcher: Sync of a nil VMI")
	}
	if l.closed.Load() {
		return ErrClosed
	}
	v := vmi.DeepCopy()
	api.Default(v, l.cfg.Cluster)
	if errs := api.Validate(v); len(errs) > 0 {
		return &InvalidError{VMI: v.Namespace + "/" + v.Name, Errors: errs}
	}
	name := convert.DomainName(v)
	deletes := l.deleteCount(name)
	rec := l.lockRecord(v)
	defer rec.syncMu.Unlock()
	key := rec.key()
	if l.deleteCount(name) != deletes {
		// A Delete called while this Sync waited for the VMI ran first.
		l.forget(rec)
		return fmt.Errorf("%w: %s", ErrDeleted, key)
	}

	began := time.Now()
	if err := prepareArtifacts(ctx, v, l.cfg.Layout, l.cfg.Sources); err != nil {
		return wrapErr(err, "prepare host artifacts of %s", key)
	}
	l.log.Debug("host artifacts prepared", "vmi", key, "took", time.Since(began))
	facts, err := l.hostFacts(ctx)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		err = l.define(ctx, v, facts)
		if err == nil {
			break
		}
		if attempt == 0 && isMemoryHotplugRefusal(err) {
			if !l.noMemoryHotplug.Swap(true) {
				l.log.Info("libvirt refuses memory hotplug; defining without <maxMemory>", "vmi", key)
			}
			continue
		}
		return err
	}

	// Publish what is defined (Scheduled, for a new VMI) before starting.
	rec.mu.Lock()
	st, err := l.refreshLocked(ctx, rec, time.Time{})
	rec.mu.Unlock()
	if err != nil {
		return err
	}
	if domain.IsFinal(st.Phase) {
		return nil // it ran to its end; a VMI never runs twice
	}
	started := false
	err = l.do(ctx, func(c *libvirt.Connect) error {
		dom, err := c.LookupDomainByName(name)
		if err != nil {
			return wrapErr(err, "look up domain %s", name)
		}
		defer dom.Free()
		state, reason, err := dom.GetState()
		if err != nil {
			return wrapErr(err, "read state of domain %s", name)
		}
		s, r := domain.State(state), domain.Reason(reason)
		switch {
		case !s.Active():
			flags := libvirt.DOMAIN_NONE
			if v.Spec.StartStrategy != nil && *v.Spec.StartStrategy == v1.StartStrategyPaused {
				flags |= libvirt.DOMAIN_START_PAUSED
			}
			began := time.Now()
			if err := dom.CreateWithFlags(flags); err != nil {
				return wrapErr(err, "start domain %s", name)
			}
			started = true
			l.log.Info("domain started", "vmi", key, "paused", flags&libvirt.DOMAIN_START_PAUSED != 0, "took", time.Since(began))
		case domain.ShouldResume(s, r):
			if err := dom.Resume(); err != nil {
				return wrapErr(err, "resume domain %s (paused: %s)", name, domain.ReasonString(s, r))
			}
			l.log.Info("domain resumed", "vmi", key, "was paused for", domain.ReasonString(s, r))
		}
		return nil
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if started {
		rec.started = true
	}
	if _, rerr := l.refreshLocked(ctx, rec, time.Time{}); err == nil {
		err = rerr
	}
	return err
}

// lockRecord returns the record of v with its syncMu held. A record that
// Delete retired while this call waited for it is replaced by a new one.
func (l *Launcher) lockRecord(v *v1.VirtualMachineInstance) *record {
	for {
		rec := l.recordFor(v)
		rec.syncMu.Lock()
		rec.mu.Lock()
		deleted := rec.deleted
		rec.mu.Unlock()
		if !deleted {
			return rec
		}
		rec.syncMu.Unlock()
	}
}

// deleteCount returns how many Deletes of the domain called name began.
func (l *Launcher) deleteCount(name string) uint64 {
	l.vmisMu.Lock()
	defer l.vmisMu.Unlock()
	return l.deletes[name]
}

// countDelete records that a Delete of the domain called name begins.
func (l *Launcher) countDelete(name string) {
	l.vmisMu.Lock()
	defer l.vmisMu.Unlock()
	if l.deletes == nil {
		l.deletes = map[string]uint64{}
	}
	l.deletes[name]++
}

// forget retires rec, whose syncMu the caller holds: it is no longer
// managed. Watch gets a last event with Deleted set when it had published
// a status of the VMI.
func (l *Launcher) forget(rec *record) {
	rec.mu.Lock()
	rec.deleted = true
	if rec.published {
		l.broadcast(rec.event(time.Time{}))
	}
	name := convert.DomainName(rec.vmi)
	rec.mu.Unlock()
	l.vmisMu.Lock()
	if l.vmis[name] == rec {
		delete(l.vmis, name)
	}
	l.vmisMu.Unlock()
}

// recordFor returns the record of v, making one for a VMI not managed yet
// and replacing the record of an earlier VMI of the same name (another UID).
func (l *Launcher) recordFor(v *v1.VirtualMachineInstance) *record {
	name := convert.DomainName(v)
	l.vmisMu.Lock()
	defer l.vmisMu.Unlock()
	if rec := l.vmis[name]; rec != nil {
		rec.mu.Lock()
		same := rec.vmi.UID == v.UID || rec.vmi.UID == "" || v.UID == ""
		if same {
			rec.vmi = v
		}
		rec.mu.Unlock()
		if same {
			return rec
		}
	}
	rec := &record{
		nsName:  v.Namespace + "/" + v.Name,
		vmi:     v,
		started: v.Status.Phase == v1.Running || domain.IsFinal(v.Status.Phase),
	}
	l.vmis[name] = rec
	return rec
}

// define converts v and defines its domain, unless the domain's inactive
// definition was made from the same canonical XML.
func (l *Launcher) define(ctx context.Context, v *v1.VirtualMachineInstance, facts hostFacts) error {
	opts, err := l.options(facts)
	if err != nil {
		return err
	}
	d, err := convert.Convert(v, opts)
	if err != nil {
		return fmt.Errorf("launcher: convert %s/%s: %w", v.Namespace, v.Name, err)
	}
	canonical, err := domain.Marshal(d)
	if err != nil {
		return wrapErr(err, "marshal domain of %s/%s", v.Namespace, v.Name)
	}
	sum := sha256.Sum256(canonical)
	hash := hex.EncodeToString(sum[:])
	addSyncMetadata(d, hash)
	out, err := d.Marshal()
	if err != nil {
		return wrapErr(err, "marshal domain of %s/%s", v.Namespace, v.Name)
	}
	began := time.Now()
	return l.do(ctx, func(c *libvirt.Connect) error {
		if dom, err := c.LookupDomainByName(d.Name); err == nil {
			raw, xerr := dom.GetXMLDesc(libvirt.DOMAIN_XML_INACTIVE)
			dom.Free()
			if xerr == nil && definedHash(raw) == hash {
				l.log.Debug("domain definition unchanged", "vmi", v.Namespace+"/"+v.Name, "took", time.Since(began))
				return nil // identical definition: leave it alone
			}
		} else if !isNoDomain(err) {
			return wrapErr(err, "look up domain %s", d.Name)
		}
		dom, err := c.DomainDefineXMLFlags(out, libvirt.DOMAIN_DEFINE_VALIDATE)
		if err != nil {
			return wrapErr(err, "define domain %s", d.Name)
		}
		dom.Free()
		l.log.Info("domain defined", "vmi", v.Namespace+"/"+v.Name, "domain", d.Name, "took", time.Since(began))
		return nil
	})
}

// addSyncMetadata adds the launcher's element, with hash (hex digits), to
// d's metadata.
func addSyncMetadata(d *libvirtxml.Domain, hash string) {
	if d.Metadata == nil {
		d.Metadata = &libvirtxml.DomainMetadata{}
	}
	d.Metadata.XML += fmt.Sprintf(`<vmi2libvirt:sync xmlns:vmi2libvirt=%q><vmi2libvirt:hash>%s</vmi2libvirt:hash></vmi2libvirt:sync>`, metadataNS, hash)
}

// definedHash returns the hash in the launcher's metadata element of a
// domain's XML, or "".
func definedHash(raw string) string {
	d := &libvirtxml.Domain{}
	if d.Unmarshal(raw) != nil || d.Metadata == nil {
		return ""
	}
	dec := xml.NewDecoder(bytes.NewReader([]byte("<m>" + d.Metadata.XML + "</m>")))
	inSync := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Space == metadataNS && t.Name.Local == "sync" {
				inSync = true
			} else if inSync && t.Name.Space == metadataNS && t.Name.Local == "hash" {
				var h string
				if dec.DecodeElement(&h, &t) != nil {
					return ""
				}
				return h
			}
		case xml.EndElement:
			if t.Name.Space == metadataNS && t.Name.Local == "sync" {
				inSync = false
			}
		}
	}
}
