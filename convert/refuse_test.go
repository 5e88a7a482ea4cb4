package convert_test

import (
	"bytes"
	"errors"
	"os"
	"testing"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/internal/pipeline"
)

// TestAccessCredentialsByCloudInit: SSH keys propagated by noCloud or
// configDrive change the cloud-init volume the launcher writes, not the
// domain: the VMI converts to the same XML with or without them. Keys and
// passwords for the guest agent are refused at their propagation method,
// which needs KubeVirt's virt-handler.
func TestAccessCredentialsByCloudInit(t *testing.T) {
	for _, tc := range []struct {
		golden string
		method v1.SSHPublicKeyAccessCredentialPropagationMethod
	}{
		{"storage-host-layout", v1.SSHPublicKeyAccessCredentialPropagationMethod{NoCloud: &v1.NoCloudSSHPublicKeyAccessCredentialPropagation{}}},
		{"storage-volume-sources", v1.SSHPublicKeyAccessCredentialPropagationMethod{ConfigDrive: &v1.ConfigDriveSSHPublicKeyAccessCredentialPropagation{}}},
	} {
		data, err := os.ReadFile("testdata/" + tc.golden + "/vmi.yaml")
		if err != nil {
			t.Fatal(err)
		}
		vmi, err := pipeline.Prepare(data, api.ClusterConfig{})
		if err != nil {
			t.Fatal(err)
		}
		opts := convert.KubeVirtOptions()
		without := marshal(t, vmi, opts)
		vmi.Spec.AccessCredentials = []v1.AccessCredential{{SSHPublicKey: &v1.SSHPublicKeyAccessCredential{
			Source:            v1.SSHPublicKeyAccessCredentialSource{Secret: &v1.AccessCredentialSecretSource{SecretName: "keys"}},
			PropagationMethod: tc.method,
		}}}
		if errs := api.Validate(vmi); len(errs) > 0 {
			t.Fatalf("%s: %v", tc.golden, errs)
		}
		if with := marshal(t, vmi, opts); !bytes.Equal(with, without) {
			t.Errorf("%s: the access credential changes the domain", tc.golden)
		}
		vmi.Spec.AccessCredentials[0].SSHPublicKey.PropagationMethod = v1.SSHPublicKeyAccessCredentialPropagationMethod{
			QemuGuestAgent: &v1.QemuGuestAgentSSHPublicKeyAccessCredentialPropagation{Users: []string{"root"}}}
		vmi.Spec.AccessCredentials = append(vmi.Spec.AccessCredentials, v1.AccessCredential{UserPassword: &v1.UserPasswordAccessCredential{
			Source:            v1.UserPasswordAccessCredentialSource{Secret: &v1.AccessCredentialSecretSource{SecretName: "pw"}},
			PropagationMethod: v1.UserPasswordAccessCredentialPropagationMethod{QemuGuestAgent: &v1.QemuGuestAgentUserPasswordAccessCredentialPropagation{}},
		}})
		_, err = convert.Convert(vmi, opts)
		var ie *api.InvalidError
		if !errors.As(err, &ie) || len(ie.Errors) != 2 ||
			ie.Errors[0].Field != "spec.accessCredentials[0].sshPublicKey.propagationMethod.qemuGuestAgent" ||
			ie.Errors[1].Field != "spec.accessCredentials[1].userPassword.propagationMethod.qemuGuestAgent" {
			t.Errorf("%s: guest agent propagation: %v, want refusals at both propagation methods", tc.golden, err)
		}
	}
}

// marshal converts vmi with opts and returns its canonical XML.
func marshal(t *testing.T, vmi *v1.VirtualMachineInstance, opts convert.Options) []byte {
	t.Helper()
	d, err := convert.Convert(vmi, opts)
	if err != nil {
		t.Fatal(err)
	}
	xml, err := domain.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return xml
}
