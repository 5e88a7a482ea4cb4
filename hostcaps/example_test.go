package hostcaps_test

import (
	"fmt"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostcaps"
)

// Facts of a small TCG host, from the documents libvirt gives (as the
// launcher reads them once per connection): its machine types, and the
// forms of KubeVirt's domain it lacks — those its probes found refused,
// and the host-model CPU, host-passthrough and TPM emulator it does not
// offer. The converter refuses a VMI that asks for one of them at the
// VMI's field.
func ExampleFacts() {
	facts, err := hostcaps.Facts(hostcaps.Documents{
		Libvirt: 9000000, QEMU: 7002000,
		Capabilities: []byte(`<capabilities><host><cpu><arch>x86_64</arch></cpu></host>
  <guest><os_type>hvm</os_type><arch name='x86_64'>
    <machine maxCpus='288'>pc-q35-7.2</machine><machine canonical='pc-q35-7.2' maxCpus='288'>q35</machine>
    <domain type='qemu'/></arch></guest></capabilities>`),
		DomainCapabilities: []byte(`<domainCapabilities><domain>qemu</domain><machine>pc-q35-7.2</machine><arch>x86_64</arch>
  <cpu><mode name='host-passthrough' supported='no'/><mode name='host-model' supported='no'/>
    <mode name='custom' supported='yes'><model usable='yes'>qemu64</model></mode></cpu></domainCapabilities>`),
		Refused:  []convert.Lack{convert.LackPvpanic, convert.LackPasst},
		Programs: map[string]bool{"swtpm": false},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("machine types:", facts.MachineTypes)
	fmt.Println("CPU models:", facts.CPUModels)
	fmt.Println("lacks:", facts.Lacks)
	// Output:
	// machine types: [pc-q35-7.2 q35]
	// CPU models: [qemu64]
	// lacks: [host-model host-passthrough panic-pvpanic tpm-emulator passt]
}
