package api

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
)

// Paths of the parts of a VMI that rules name in their errors.
var (
	metadataPath = field.NewPath("metadata")
	specPath     = field.NewPath("spec")
	domainPath   = specPath.Child("domain")
	devicesPath  = domainPath.Child("devices")
	disksPath    = devicesPath.Child("disks")
	ifacesPath   = devicesPath.Child("interfaces")
	volumesPath  = specPath.Child("volumes")
	networksPath = specPath.Child("networks")
	cpuPath      = domainPath.Child("cpu")
	memoryPath   = domainPath.Child("memory")
	resPath      = domainPath.Child("resources")
	firmwarePath = domainPath.Child("firmware")
	featuresPath = domainPath.Child("features")
	hypervPath   = featuresPath.Child("hyperv")
)

// ruleFamily is one family of admission rules. It returns the problems it
// finds, each on the path of the offending field.
type ruleFamily struct {
	name  string
	check func(vmi *v1.VirtualMachineInstance) field.ErrorList
}

// ruleFamilies are the rule families Validate applies, in this order.
// Most are KubeVirt's VMI admission rules (pkg/virt-api/webhooks/
// validating-webhook/admitters/vmi-create-admitter.go and the storage,
// network and Hyper-V admitters it calls); the doc comment of each family
// says where a rule is this library's own (for names and paths that become
// host paths here, and for limits a cluster would enforce elsewhere).
// Rules that only make sense in a cluster (feature gates, node affinity,
// DNS policy, service accounts of the cluster) are not applied.
var ruleFamilies = []ruleFamily{
	{"metadata", validateMetadata},
	{"platform", validatePlatform},
	{"memory", validateMemory},
	{"cpu", validateCPU},
	{"disks", validateDisks},
	{"volumes", validateVolumes},
	{"cloud-init", validateCloudInit},
	{"access credentials", validateAccessCredentials},
	{"boot order", validateBootOrder},
	{"networks", validateNetworks},
	{"interfaces", validateInterfaces},
	{"pci addresses", validatePCIAddresses},
	{"firmware", validateFirmware},
	{"features", validateFeatures},
	{"clock", validateClock},
	{"devices", validateDevices},
	{"aliases", validateAliases},
	{"lifecycle", validateLifecycle},
	{"strings", validateStrings},
}

// createRuleFamilies are the rules KubeVirt applies only when a VMI is
// created: an object it admitted may break them, since KubeVirt itself
// sets what they refuse.
var createRuleFamilies = []ruleFamily{
	{"reserved labels", validateReservedLabels},
}

// Validate applies KubeVirt's VMI admission rules that make sense without a
// cluster, and a few of this library's own, to vmi (normally after Default,
// as KubeVirt validates the defaulted object). It returns every problem
// found, each naming the path of the field in the VMI, in a fixed order
// (by rule family, then by position in the VMI). An empty list means the VMI
// is valid. Validate does not modify vmi.
//
// Validate accepts an object as the API server returns it once admitted:
// its status, managed fields, and the labels and annotations KubeVirt sets
// (kubevirt.io/nodeName...). The rules KubeVirt applies only when a VMI is
// created are ValidateCreate's.
func Validate(vmi *v1.VirtualMachineInstance) field.ErrorList {
	return validate(vmi, ruleFamilies)
}

// ValidateCreate is Validate with the rules KubeVirt applies only when a
// VMI is created (no label KubeVirt reserves for itself), for a VMI about
// to be created: an admission webhook's, or a file checked before kubectl
// create.
func ValidateCreate(vmi *v1.VirtualMachineInstance) field.ErrorList {
	errs := validate(vmi, ruleFamilies)
	if vmi != nil {
		errs = append(errs, validate(vmi, createRuleFamilies)...)
	}
	return errs
}

// validate applies families to vmi.
func validate(vmi *v1.VirtualMachineInstance, families []ruleFamily) field.ErrorList {
	if vmi == nil {
		return field.ErrorList{field.Required(specPath, "no VirtualMachineInstance")}
	}
	var errs field.ErrorList
	for _, f := range families {
		errs = append(errs, f.check(vmi)...)
	}
	return errs
}

// enabled reports whether an optional feature state is on: set, with
// enabled unset or true.
func enabled(fs *v1.FeatureState) bool {
	return fs != nil && (fs.Enabled == nil || *fs.Enabled)
}

// isTrue reports whether an optional bool is set and true.
func isTrue(b *bool) bool { return b != nil && *b }

// isFalse reports whether an optional bool is set and false.
func isFalse(b *bool) bool { return b != nil && !*b }

// uniqueNames finds names used twice in one list of named entries (disks,
// volumes, networks, interfaces).
type uniqueNames struct {
	list  *field.Path
	first map[string]int
}

func newUniqueNames(list *field.Path) uniqueNames {
	return uniqueNames{list: list, first: map[string]int{}}
}

// add records the name of entry i. A name an earlier entry has gives a
// Duplicate error on entry i's name that points at the first use; why, if
// set, follows it.
func (u uniqueNames) add(i int, name, why string) *field.Error {
	j, dup := u.first[name]
	if !dup {
		u.first[name] = i
		return nil
	}
	detail := fmt.Sprintf("%s (also %s)", name, u.list.Index(j).Child("name"))
	if why != "" {
		detail += ": " + why
	}
	return field.Duplicate(u.list.Index(i).Child("name"), detail)
}
