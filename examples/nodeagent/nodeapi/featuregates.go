package nodeapi

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// featureGates are the KubeVirt feature gates (the KubeVirt CR's
// spec.configuration.developerConfiguration.featureGates) that change
// Scheduling, each with what it turns on.
var featureGates = map[string]func(*Scheduling){
	"HypervStrictCheck": func(s *Scheduling) { s.HypervStrictCheck = true },
}

// ParseFeatureGates reads a comma-separated list of KubeVirt feature gate
// names (as the KubeVirt CR lists them: HypervStrictCheck) into the
// Scheduling they turn on; "" is KubeVirt's default. A name of no gate
// that changes scheduling is an error naming it and the known ones.
func ParseFeatureGates(list string) (Scheduling, error) {
	var s Scheduling
	if list == "" {
		return s, nil
	}
	for _, name := range strings.Split(list, ",") {
		on, ok := featureGates[name]
		if !ok {
			return Scheduling{}, fmt.Errorf("%q is not a feature gate that changes scheduling (known: %s)", name, strings.Join(slices.Sorted(maps.Keys(featureGates)), ", "))
		}
		on(&s)
	}
	return s, nil
}
