package convert

import (
	"strings"
	"testing"

	v1 "kubevirt.io/api/core/v1"
)

// A SEV guest boots Options.EFI.SEVCode with the plain variables, and is
// refused at spec.domain.launchSecurity on a host that names no SEV
// build; a host whose facts do not list their launch-security forms
// (nil, KubeVirt's libvirt) is not checked, one that lists them must
// have "sev".
func TestLaunchSecuritySEV(t *testing.T) {
	off := false
	vmi := efiVMI(&off, false)
	vmi.Spec.Domain.LaunchSecurity = &v1.LaunchSecurity{SEV: &v1.SEV{}}
	d, _, err := runArea(t, vmi, nil, (*converter).os, (*converter).launchSecurity)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.OS.Loader.Path; got != "/usr/share/edk2/ovmf/OVMF_CODE.cc.fd" || d.OS.NVRam.Template != "/usr/share/edk2/ovmf/OVMF_VARS.fd" {
		t.Errorf("loader %s, variables %s: want KubeVirt's SEV build with the plain variables", got, d.OS.NVRam.Template)
	}
	if ls := d.LaunchSecurity; ls == nil || ls.SEV == nil || ls.SEV.Policy == nil || *ls.SEV.Policy != 1 {
		t.Errorf("launchSecurity %+v, want SEV with policy 0x1", ls)
	}
	_, _, err = runArea(t, vmi, func(o *Options) { o.EFI.SEVCode = "" }, (*converter).os)
	if err == nil || !strings.HasPrefix(err.Error(), "spec.domain.launchSecurity: Forbidden: no SEV firmware on this host") {
		t.Errorf("no SEV build: %v", err)
	}
	for _, c := range []struct {
		offered []string
		err     string
	}{
		{nil, ""},
		{[]string{"sev", "sev-es"}, ""},
		{[]string{"tdx"}, `spec.domain.launchSecurity: Unsupported value: "sev": this host's libvirt offers no AMD SEV; its launch-security forms are "tdx"`},
	} {
		_, _, err := runArea(t, vmi, func(o *Options) { o.HostFacts.LaunchSecurity = c.offered }, (*converter).launchSecurity)
		if (err == nil) != (c.err == "") || err != nil && err.Error() != c.err {
			t.Errorf("host offering %v: %v, want %q", c.offered, err, c.err)
		}
	}
}
