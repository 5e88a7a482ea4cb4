package hostplan

import (
	"strings"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// TestMakeSharedFolders: a configMap a filesystem shares is a folder of
// its files to write (no ISO), a claim it shares is the host's folder
// (nothing to make), and the domain shares both through libvirt's
// virtiofsd. The claim's folder is only checked.
func TestMakeSharedFolders(t *testing.T) {
	host := testHost()
	l := host.Options.Layout.(convert.HostLayout)
	l.Claims = map[string]convert.DiskSource{"data": {Type: "dir", Path: "/srv/shares/data"}}
	host.Options.Layout = l
	req, err := Prepare(decodeVMI(t, `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: web, namespace: shop}
spec:
  domain:
    resources: {requests: {memory: 128Mi}}
    devices:
      filesystems:
      - {name: app, virtiofs: {}}
      - {name: data, virtiofs: {}}
  volumes:
  - {name: app, configMap: {name: app}}
  - {name: data, persistentVolumeClaim: {claimName: data}}
`), host)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Make(req, host, webInputs())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range p.Artifacts {
		got = append(got, a.String())
	}
	want := []string{
		"create stateDir /srv/vmis 0711",
		"create stateFolder /srv/vmis/shop_web 0700",
		"create folder /srv/vmis/shop_web/config 0711",
		"write configFolder /srv/vmis/shop_web/config/app 0700 2 files (volume app)",
		"check sharedFolder /srv/shares/data (volume data)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("artifacts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if f := p.Artifacts[3].Files; len(f) != 2 || f[0].Path != "a.conf" || string(f[1].Data) != "b" {
		t.Errorf("files %+v, want a.conf and b.conf, sorted", f)
	}
	xml := string(p.XML)
	for _, s := range []string{`<source dir="/srv/vmis/shop_web/config/app">`, `<source dir="/srv/shares/data">`, `<binary path="/usr/lib/qemu/virtiofsd">`, `<access mode="shared">`} {
		if !strings.Contains(xml, s) {
			t.Errorf("domain has no %s", s)
		}
	}
}
