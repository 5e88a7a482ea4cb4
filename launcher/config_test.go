package launcher

import (
	"strings"
	"testing"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// TestConfigCheck: check refuses each Config the launcher could not
// honour, naming the field, and takes a complete one.
func TestConfigCheck(t *testing.T) {
	claimsOf := func(*v1.VirtualMachineInstance) map[string]convert.DiskSource { return nil }
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // a part of the error; empty: none
	}{
		{"complete", func(*Config) {}, ""},
		{"claims per VMI", func(c *Config) { c.ClaimsOf = claimsOf }, ""},
		{"relative state folder", func(c *Config) { c.Layout.StateDir = "state" }, "Config.Layout.StateDir"},
		{"relative image store", func(c *Config) { c.Layout.ImageStore = "images" }, "Config.Layout.ImageStore"},
		{"owner not an alias", func(c *Config) { c.Owner = "a b" }, "Config.Owner"},
		{"converter layout", func(c *Config) { c.Options.Layout = convert.HostLayout{} }, "Config.Options.Layout is set"},
		{"domain type", func(c *Config) { c.Options.DomainType = "kvm" }, "Config.Options.DomainType is set"},
		{"two image stores", func(c *Config) { c.Images.Root = "/elsewhere" }, "Config.Images.Root"},
		{"claims two ways", func(c *Config) {
			c.ClaimsOf = claimsOf
			c.Layout.Claims = map[string]convert.DiskSource{"data": {Path: "/srv/data.img"}}
		}, "Config.ClaimsOf and Config.Layout.Claims"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Owner: "node01", Layout: convert.HostLayout{StateDir: "/var/lib/x/state", ImageStore: "/var/lib/x/images"}}
			tc.edit(&cfg)
			err := cfg.withDefaults().check()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("check: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("check: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}
