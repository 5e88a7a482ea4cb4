package pipeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/internal/fixtures"
)

// acceptedByConvert are the cases of the catalogue that api.Validate refuses
// and convert.Convert, given them without validation, converts: their rule
// is the VMI's alone, api's, and the converter does not check it again.
// Each group says why the converter has nothing to refuse. Every other case
// api refuses, the converter must refuse too (or the rule is missing from
// one side); a case listed here that the converter refuses must leave the
// list.
var acceptedByConvert = map[string][]string{
	"a containerPath volume is a folder of KubeVirt's pod that its virtiofsd shares: the KubeVirt layout names only the socket, after the filesystem, and where the path may lie is api's rule": {
		"volumes-containerpath-reserved",
	},
	"access credentials reach the guest in the cloud-init volume the launcher writes, not in the domain: their secrets, methods and volumes are api's rules": {
		"access-empty", "access-password-no-agent", "access-ssh-configdrive-no-volume",
		"access-ssh-no-propagation", "access-ssh-no-secret", "access-ssh-nocloud-no-volume",
		"access-ssh-secret-name-invalid", "access-ssh-secret-no-name",
	},
	"boot orders are written as they are: their range and uniqueness are api's rules": {
		"bootorder-disk-interface-duplicate", "bootorder-disks-duplicate", "bootorder-interface-2e32",
		"bootorder-interface-zero", "decode-bootorder-2e63",
	},
	"what realtime needs (KubeVirt's: NUMA passthrough; this library's: a mask KubeVirt reads, naming the VMI's vCPUs) is api's rule: the converter gives realtime's settings where they apply, <vcpusched> to the booted vCPUs a mask it reads names (none for one it cannot read)": {
		"cpu-realtime-mask-beyond", "cpu-realtime-mask-syntax", "cpu-realtime-without-numa",
	},
	"a supplementalPool without a thread count, a discard granularity that is no multiple of the logical size: api's rules (with KubeVirt's libvirt the converter writes the pool it is given, and the granularity)": {
		"devices-iothreads-pool-no-count", "disks-blocksize-discard",
	},
	"the clock offset is a union: that the VMI sets one of utc and timezone is api's rule (the converter takes utc)": {
		"clock-utc-and-timezone",
	},
	"cloud-init data is the content of the launcher's volume, not of the domain": {
		"cloudinit-configdrive-empty", "cloudinit-configdrive-userdata-too-long",
		"cloudinit-networkdata-and-base64", "cloudinit-networkdata-base64-invalid",
		"cloudinit-networkdata-secret-name-invalid", "cloudinit-networkdata-too-long", "cloudinit-nocloud-empty",
		"cloudinit-secret-name-invalid", "cloudinit-userdata-and-base64", "cloudinit-userdata-and-secret",
		"cloudinit-userdata-base64-invalid", "cloudinit-userdata-base64-too-long", "cloudinit-userdata-too-long",
	},
	"CPU quantities, topology limits and the rules of dedicated CPUs are api's: the converter writes the topology it is given (one too large for a list of hotpluggable vCPUs gets none)": {
		"cpu-dedicated-fraction-limit", "cpu-dedicated-fraction-request", "cpu-dedicated-memory-request-not-limit",
		"cpu-dedicated-request-not-limit", "cpu-dedicated-three-threads", "cpu-dedicated-topology-mismatch",
		"cpu-feature-bad-policy", "cpu-feature-no-name", "cpu-feature-twice", "cpu-isolate-without-dedicated", "cpu-limit-10Ei",
		"cpu-limit-negative", "cpu-maxsockets-below-sockets-default", "cpu-maxsockets-too-many",
		"cpu-request-2e63", "cpu-request-above-limit", "cpu-request-negative", "cpu-request-too-many",
		"cpu-sockets-above-maxsockets", "cpu-topology-max-uint32", "cpu-topology-too-many",
	},
	"KubeVirt's rules of disk kinds, buses, names, serials, block sizes, caches, boot orders and volumes are api's: the converter writes the fields as they are (a disk without its volume has no source)": {
		"disks-blocksize-both", "disks-blocksize-logical-above-physical", "disks-blocksize-not-power",
		"disks-blocksize-sata-4096", "disks-blocksize-too-big", "disks-blocksize-too-small",
		"disks-bootorder-2e32", "disks-bootorder-zero", "disks-bus-ide", "disks-bus-unknown",
		"disks-cache-unknown", "disks-cdrom-no-volume", "disks-cdrom-virtio", "disks-downwardmetrics-cdrom",
		"disks-downwardmetrics-sata", "disks-errorpolicy-unknown", "disks-io-unknown", "disks-io-native-writeback", "disks-iothread-sata",
		"disks-name-duplicate", "disks-name-missing", "disks-no-volume", "disks-pci-function", "disks-pci-on-sata",
		"disks-pci-syntax", "disks-sata-readonly", "disks-serial-space", "disks-serial-too-long",
		"disks-serial-xml", "disks-shareable-cache", "disks-shareable-cdrom", "disks-tray-unknown",
		"disks-two-kinds", "disks-vm-bus-floppy",
	},
	"device names become aliases (ua-<name>): that they are set, alias names and no two the same is api's rule": {
		"devices-alias-disk-input", "devices-alias-two-inputs",
		"devices-input-name-not-alias", "devices-input-no-name", "devices-sound-no-name",
		"devices-watchdog-name-not-alias", "devices-watchdog-no-name",
	},
	"a word outside its vocabulary (internal/vocab) is api's to refuse: the converter writes the word, or leaves out the device it has no word for": {
		"devices-input-bus-ps2", "devices-input-type-mouse", "devices-iothreads-policy-unknown",
		"devices-panic-model-unknown", "devices-sound-model-unknown", "devices-video-type-unknown",
		"devices-watchdog-action", "devices-watchdog-diag288",
	},
	"without graphics the converter writes no video device: that none is asked for then is api's rule": {
		"devices-video-without-graphics",
	},
	"ioThreads without the supplementalPool policy shapes no element: that it is not ignored silently is api's rule": {
		"devices-iothreads-without-pool",
	},
	"feature switches are written as they are: their dependencies, exclusions and what libvirt takes of a vendor id are api's rules": {
		"features-hyperv-and-passthrough", "features-hyperv-dependency",
		"features-vendorid-comma", "features-vendorid-empty", "features-vendorid-too-long",
	},
	"SEV is converted as the VMI asks: its firmware, secure boot, its bootable NICs and the choice of one form are api's rules": {
		"firmware-launchsecurity-two", "firmware-sev-boot-nic", "firmware-sev-no-efi", "firmware-sev-secureboot",
	},
	"firmware settings are written as they are: EFI against BIOS and ACPI, paths inside images, kernel arguments without a kernel, secure boot without SMM and the UUID's syntax are api's rules": {
		"firmware-efi-and-bios", "firmware-bios-serial-no-console", "firmware-efi-without-acpi", "firmware-initrdpath-dotdot",
		"firmware-kernelargs-initrd-only", "firmware-kernelargs-no-container", "firmware-kernelboot-no-image",
		"firmware-kernelboot-no-paths", "firmware-kernelpath-relative", "firmware-secureboot-smm-off",
		"firmware-secureboot-smm-unset", "firmware-uuid-invalid",
	},
	"interface fields are written as they are (a MAC or PCI address that does not parse is left out): names, bindings, MACs, ports, DHCP options, models and states are api's rules": {
		"interfaces-dhcp-ntp-ipv6", "interfaces-dhcp-ntp-name", "interfaces-dhcp-private-duplicate",
		"interfaces-dhcp-private-range", "interfaces-duplicate", "interfaces-mac-eui64",
		"interfaces-mac-multicast", "interfaces-mac-short", "interfaces-mac-syntax", "interfaces-macvtap",
		"interfaces-masquerade-bridge-mac", "interfaces-masquerade-multus", "interfaces-model-unknown",
		"interfaces-name-invalid", "interfaces-no-binding", "interfaces-no-network", "interfaces-passt-deprecated",
		"interfaces-pci-function", "interfaces-pci-syntax", "interfaces-port-name-duplicate",
		"interfaces-port-name-invalid", "interfaces-port-negative", "interfaces-port-protocol",
		"interfaces-port-too-big", "interfaces-port-zero", "interfaces-slirp", "interfaces-state-absent-default",
		"interfaces-state-absent-masquerade", "interfaces-state-unknown", "interfaces-two-bindings",
	},
	"the start and eviction strategies and the grace period shape no element, and an unknown reboot policy leaves libvirt's default: api's rules": {
		"lifecycle-eviction-unknown", "lifecycle-grace-negative", "lifecycle-rebootpolicy-unknown",
		"lifecycle-startstrategy-unknown",
	},
	"memory quantities are api's rules: the converter writes the bytes it is given (none, or a negative amount, as 0)": {
		"memory-guest-10Ei", "memory-guest-17Ti", "memory-guest-2e63", "memory-guest-exponent",
		"memory-guest-negative", "memory-guest-zero", "memory-hugepages-larger-than-memory",
		"memory-hugepages-not-multiple", "memory-hugepages-pagesize-bad", "memory-hugepages-pagesize-exponent",
		"memory-hugepages-pagesize-zero", "memory-limit-negative", "memory-maxguest-10Ei",
		"memory-maxguest-below-guest", "memory-none", "memory-request-10Ei", "memory-request-2e63",
		"memory-request-above-limit", "memory-request-negative", "memory-request-too-small",
	},
	"names, labels and annotations follow Kubernetes' syntax and KubeVirt's reserved labels, api's rules: the domain carries the name as it is": {
		"metadata-annotation-key-invalid", "metadata-hostname-dot", "metadata-label-key-bracket",
		"metadata-label-key-prefix", "metadata-label-key-space", "metadata-label-reserved",
		"metadata-label-value-space", "metadata-label-value-too-long", "metadata-name-dotdot",
		"metadata-name-missing", "metadata-name-newline", "metadata-name-slash", "metadata-name-too-long",
		"metadata-name-underscore", "metadata-name-uppercase", "metadata-namespace-dot",
		"metadata-namespace-uppercase", "metadata-subdomain-underscore", "metadata-vm-template-label-key",
	},
	"networks are what interfaces attach to: their names, sources and defaults are api's rules": {
		"networks-duplicate", "networks-multus-no-network-name", "networks-name-missing", "networks-no-source",
		"networks-pod-and-multus-default", "networks-two-multus-default", "networks-two-pod",
		"networks-two-sources", "networks-unused",
	},
	"guest PCI addresses are written as they are: what q35 and libvirt take is api's rule": {
		"pci-chipset-slot", "pci-domain-not-zero", "pci-host-bridge-slot", "pci-same-address-twice",
		"pci-slot-too-big",
	},
	"the architecture and machine type are written as they are: KubeVirt's amd64 machines are api's rule": {
		"platform-architecture-arm64", "platform-architecture-typo", "platform-machine-i440fx",
		"platform-machine-s390",
	},
	"free text is written as the XML encoder escapes it: its syntax and length are api's rules": {
		"strings-chassis-asset-too-long", "strings-chassis-newline", "strings-cpu-feature-quote",
		"strings-cpu-model-space", "strings-cpu-model-xml", "strings-firmware-serial-newline",
		"strings-firmware-serial-nul", "strings-firmware-serial-too-long", "strings-timezone-absolute",
		"strings-timezone-dotdot", "strings-vendorid-control",
	},
	"a volume's fields are api's rules: the layout places any volume inside its own folders (without a claim or image name too)": {
		"volumes-configmap-no-name", "volumes-containerdisk-image-space", "volumes-containerdisk-image-too-long",
		"volumes-containerdisk-no-image", "volumes-containerdisk-path-dotdot", "volumes-containerdisk-path-nul",
		"volumes-containerdisk-path-relative", "volumes-containerdisk-path-root",
		"volumes-datavolume-name-invalid", "volumes-datavolume-no-name", "volumes-emptydisk-10Ei",
		"volumes-emptydisk-2e63", "volumes-emptydisk-negative", "volumes-emptydisk-zero",
		"volumes-ephemeral-claim-invalid", "volumes-hostdisk-capacity-disk", "volumes-hostdisk-capacity-negative",
		"volumes-hostdisk-dotdot", "volumes-hostdisk-no-path", "volumes-hostdisk-relative",
		"volumes-hostdisk-type-missing", "volumes-hostdisk-type-unknown", "volumes-name-duplicate",
		"volumes-name-missing", "volumes-pvc-claim-invalid", "volumes-pvc-no-claim",
		"volumes-pvc-readonly-rw-disk", "volumes-secret-name-invalid", "volumes-secret-no-name",
		"volumes-serviceaccount-no-name", "volumes-sysprep-both", "volumes-sysprep-name-invalid",
		"volumes-sysprep-none", "volumes-two-serviceaccounts",
	},
}

// convertDoc is the converter's package documentation, whose table lists
// the fields Convert refuses and why each depends on the host.
const convertDoc = "../../convert/doc.go"

// TestCatalogueWithoutValidation runs every case of the catalogue (and
// every refused golden case of convert/testdata) through convert.Convert
// after api.Default, without api.Validate, with the case's options. The
// converter must not panic; a case api refuses it must refuse too unless
// acceptedByConvert lists it (and then it must convert, to a domain that
// marshals); a case api accepts it must refuse (the catalogue holds only
// refused VMIs). Every field the converter refuses must be a row of the
// table of convert's package documentation: the fields whose refusal
// depends on the host, the options or the layout.
func TestCatalogueWithoutValidation(t *testing.T) {
	documented := documentedRefusals(t)
	listed := map[string]string{}
	for why, cases := range acceptedByConvert {
		for _, c := range cases {
			if prev, dup := listed[c]; dup {
				t.Errorf("%s is listed twice in acceptedByConvert (%q and %q)", c, prev, why)
			}
			listed[c] = why
		}
	}
	files, err := filepath.Glob(filepath.Join(invalidDir, "*"+caseExt))
	if err != nil {
		t.Fatal(err)
	}
	golden, err := filepath.Glob("../../convert/testdata/*/" + fixtures.ErrorFile)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, file := range files {
		if strings.HasSuffix(file, optionsExt) {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(file), caseExt)
		seen[name] = true
		runWithoutValidation(t, name, file, strings.TrimSuffix(file, caseExt)+optionsExt, catalogue, listed[name] != "", documented)
	}
	// The refused golden cases of convert/testdata: only that the
	// converter does not panic and refuses what its table lists.
	for _, file := range golden {
		dir := filepath.Dir(file)
		runWithoutValidation(t, "golden "+filepath.Base(dir), filepath.Join(dir, fixtures.VMIFile), filepath.Join(dir, fixtures.OptionsFile), goldenCase, false, documented)
	}
	for c := range listed {
		if !seen[c] {
			t.Errorf("acceptedByConvert lists %s, which is not a case of the catalogue", c)
		}
	}
}

// The cases runWithoutValidation runs.
const (
	catalogue  = iota // a case of the catalogue: refused by api or by the converter
	goldenCase        // a refused golden case, whose refusal may be any stage's
)

// runWithoutValidation converts the case in file with the options of
// optionsFile, without validation, and checks the outcome; listed tells
// whether acceptedByConvert lists it.
func runWithoutValidation(t *testing.T, name, file, optionsFile string, kind int, listed bool, documented []*regexp.Regexp) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := fixtures.LoadConfig(optionsFile)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := api.DecodeDocument(data)
	if err != nil {
		return // decode's rules: no VMI to convert
	}
	api.Default(doc.VMI, cfg.Cluster)
	validate := api.Validate
	if cfg.Create {
		validate = api.ValidateCreate
	}
	apiRefuses := len(validate(doc.VMI)) > 0
	d, err := convertSafely(doc.VMI, cfg.Options)
	var invalid *api.InvalidError
	switch {
	case err != nil && !errors.As(err, &invalid):
		t.Errorf("%s: the converter fails with %v, not a refusal of the VMI's fields", name, err)
		return
	case err != nil:
		for _, fe := range invalid.Errors {
			if !matchesAny(documented, fe.Field) {
				t.Errorf("%s: the converter refuses %s, which the table of %s does not list (a rule of the VMI alone is api's; a refusal that depends on the host needs its row): %v", name, fe.Field, convertDoc, fe)
			}
		}
		if listed {
			t.Errorf("%s: acceptedByConvert lists it, but the converter refuses it (%v): drop it from the list", name, err)
		}
		return
	case kind == goldenCase:
	case !apiRefuses:
		t.Errorf("%s: neither api.Validate nor the converter refuses it", name)
	case !listed:
		t.Errorf("%s: api.Validate refuses it and the converter converts it: if the rule is the VMI's alone, list it in acceptedByConvert with the reason; if it depends on the host, the converter must refuse it", name)
	}
	if _, err := domain.Marshal(d); err != nil {
		t.Errorf("%s: the domain the converter made does not marshal: %v", name, err)
	}
}

// convertSafely is convert.Convert, with a panic turned into an error.
func convertSafely(vmi *v1.VirtualMachineInstance, opts convert.Options) (d *libvirtxml.Domain, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return convert.Convert(vmi, opts)
}

// documentedRefusals reads the fields of the table in convert's package
// documentation (the block after "field  why it depends on the host"), as
// patterns that match a field path with any list index for [*].
func documentedRefusals(t *testing.T) []*regexp.Regexp {
	t.Helper()
	src, err := os.ReadFile(convertDoc)
	if err != nil {
		t.Fatal(err)
	}
	var out []*regexp.Regexp
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		line = strings.TrimPrefix(line, "//")
		switch {
		case strings.HasPrefix(line, "\tfield ") && strings.Contains(line, "why it depends on the host"):
			in = true
			continue
		case !in:
			continue
		case !strings.HasPrefix(line, "\t"):
			in = false
			continue
		}
		for _, word := range strings.Fields(line) {
			word = strings.TrimSuffix(word, ",")
			if strings.HasPrefix(word, "spec.") || strings.HasPrefix(word, "metadata.") {
				pattern := strings.ReplaceAll(regexp.QuoteMeta(word), `\[\*\]`, `\[\d+\]`)
				out = append(out, regexp.MustCompile("^"+pattern+"$"))
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no table of refused fields", convertDoc)
	}
	return out
}

// matchesAny tells whether one of the patterns matches path.
func matchesAny(patterns []*regexp.Regexp, path string) bool {
	for _, p := range patterns {
		if p.MatchString(path) {
			return true
		}
	}
	return false
}
