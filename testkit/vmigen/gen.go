package vmigen

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// gen is the state of the generation of one VMI: its random stream, the
// VMI so far, and the facts that later areas must respect (names taken,
// boot orders and PCI slots used, what was decided about CPUs, memory and
// firmware).
type gen struct {
	r    *rand.Rand
	cfg  Config
	kv   bool // the KubeVirt profile
	host bool // the host layout
	vmi  *v1.VirtualMachineInstance
	spec *v1.VirtualMachineInstanceSpec

	refusable []string
	newer     []convert.Lack

	// names are the names of disks, volumes, interfaces, networks and
	// devices taken: each becomes a libvirt alias (ua-<name>), and
	// libvirt wants aliases unique across all devices.
	names map[string]bool
	// bootOrders, pciSlots and acpiIndexes are the boot orders, guest PCI
	// slots (of bus 0) and ACPI indexes taken.
	bootOrders  map[uint]bool
	pciSlots    map[uint32]bool
	acpiIndexes map[int]bool
	macs        []string
	hostPCI     map[string]bool // host PCI addresses mapped

	// Facts decided early that later areas read.
	dedicated   bool // dedicated CPU placement
	vcpus       uint // with dedicated placement, the vCPUs pinned
	hugepages   bool
	efi         bool
	configDrive bool // a cloudInitConfigDrive volume (device tags are refused then)
	// metricsDevice: the devices area adds the downward metrics device
	// (decided with the volumes: a VMI has it or the metrics disk).
	metricsDevice bool

	// What the host layout's Options map.
	claims      map[string]convert.DiskSource
	networks    map[string]convert.InterfaceAttachment
	hostDevices map[string]convert.HostDevice
}

func newGen(cfg Config, i int) *gen {
	g := &gen{
		r:           newRand(cfg.Seed, i),
		cfg:         cfg,
		kv:          cfg.Profile == KubeVirt,
		host:        cfg.Layout == HostLayout,
		names:       map[string]bool{},
		bootOrders:  map[uint]bool{},
		pciSlots:    map[uint32]bool{},
		acpiIndexes: map[int]bool{},
		hostPCI:     map[string]bool{},
		claims:      map[string]convert.DiskSource{},
		networks:    map[string]convert.InterfaceAttachment{},
		hostDevices: map[string]convert.HostDevice{},
	}
	g.vmi = &v1.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{Name: Name(cfg, i)},
	}
	g.spec = &g.vmi.Spec
	return g
}

// draw fills the VMI, area by area. The order matters where an area reads
// what an earlier one decided: memory and CPUs first (dedicated CPUs and
// hugepages shape the rest), then firmware, storage before the network
// (a config drive forbids device tags), devices last.
func (g *gen) draw() {
	skip := g.cfg.Skip
	g.metadata(skip&AreaMetadata == 0)
	if skip&AreaCPU == 0 {
		g.cpuAndMemory()
	} else {
		g.memoryOnly()
	}
	if skip&AreaFirmware == 0 {
		g.firmware()
	}
	if skip&AreaFeatures == 0 {
		g.features()
	}
	if skip&AreaClock == 0 {
		g.clock()
	}
	if skip&AreaStorage == 0 {
		g.storage()
	}
	if skip&AreaNetwork == 0 {
		g.network()
	}
	if skip&AreaDevices == 0 {
		g.devices()
	}
	if skip&AreaMetadata == 0 {
		g.lifecycle()
	}
}

// beyond records that the field at p was drawn from beyond the Supported
// vocabulary.
func (g *gen) beyond(p *field.Path) {
	g.refusable = append(g.refusable, p.String())
}

// beyondWhereLacked records the field at p, whose form is form: beyond the
// Supported vocabulary where the Case's Options lack the form (the host
// layout, Debian 12's libvirt), a newer libvirt's form where they have it.
func (g *gen) beyondWhereLacked(p *field.Path, form convert.Lack) {
	if g.host && slices.Contains(debian12Lacks, form) {
		g.beyond(p)
		return
	}
	if !slices.Contains(g.newer, form) {
		g.newer = append(g.newer, form)
	}
}

// p reports true with probability prob.
func (g *gen) p(prob float64) bool { return g.r.Float64() < prob }

// n returns a number from lo to hi, both included.
func (g *gen) n(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

// pick returns one of xs, each as likely.
func pick[T any](g *gen, xs ...T) T { return xs[g.r.IntN(len(xs))] }

// weighted is a choice with its weight.
type weighted[T any] struct {
	w int
	v T
}

// pickW returns one of the choices, each as likely as its weight says.
func pickW[T any](g *gen, choices ...weighted[T]) T {
	total := 0
	for _, c := range choices {
		total += c.w
	}
	x := g.r.IntN(total)
	for _, c := range choices {
		if x < c.w {
			return c.v
		}
		x -= c.w
	}
	panic("unreachable")
}

// name returns a name made of base and, when base is taken, a number,
// and takes it.
func (g *gen) name(base string) string {
	n := base
	for i := 2; g.names[n]; i++ {
		n = fmt.Sprintf("%s%d", base, i)
	}
	g.names[n] = true
	return n
}

// bootOrder returns a boot order no other device has.
func (g *gen) bootOrder() *uint {
	for {
		o := uint(g.n(1, 12))
		if g.r.IntN(8) == 0 {
			o = uint(g.n(13, 1000))
		}
		if !g.bootOrders[o] {
			g.bootOrders[o] = true
			return &o
		}
	}
}

// pciAddress returns a guest PCI address on bus 0 that no other device
// has: slots 0x0a to 0x1a, clear of the q35 chipset's (0, 0x1f), VGA's (1)
// and the slots libvirt fills first.
func (g *gen) pciAddress() string {
	for {
		s := uint32(g.n(0x0a, 0x1a))
		if !g.pciSlots[s] {
			g.pciSlots[s] = true
			return fmt.Sprintf("0000:00:%02x.0", s)
		}
	}
}

// annotate sets an annotation of the VMI.
func (g *gen) annotate(k, v string) {
	if g.vmi.Annotations == nil {
		g.vmi.Annotations = map[string]string{}
	}
	g.vmi.Annotations[k] = v
}

// q parses a quantity the generator writes.
func q(s string) resource.Quantity { return resource.MustParse(s) }

// qp is q as a pointer.
func qp(s string) *resource.Quantity {
	x := q(s)
	return &x
}

func ptr[T any](v T) *T { return &v }

// Paths of the VMI fields the generator names in Case.Refusable.
var (
	specPath     = field.NewPath("spec")
	domainPath   = specPath.Child("domain")
	devicesPath  = domainPath.Child("devices")
	disksPath    = devicesPath.Child("disks")
	ifacesPath   = devicesPath.Child("interfaces")
	volumesPath  = specPath.Child("volumes")
	cpuPath      = domainPath.Child("cpu")
	featuresPath = domainPath.Child("features")
)
