package api

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
)

// validateAccessCredentials applies KubeVirt's rules for access
// credentials: each is one kind (sshPublicKey or userPassword) with one
// secret source and one propagation method, noCloud and configDrive
// propagation need a volume of that kind, guest-agent propagation of SSH
// keys names at least one user; secret names are DNS-1123 subdomains (this
// library's own).
func validateAccessCredentials(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	hasNoCloud, hasConfigDrive := false, false
	for _, v := range vmi.Spec.Volumes {
		hasNoCloud = hasNoCloud || v.CloudInitNoCloud != nil
		hasConfigDrive = hasConfigDrive || v.CloudInitConfigDrive != nil
	}
	base := specPath.Child("accessCredentials")
	secret := func(p *field.Path, s *v1.AccessCredentialSecretSource) {
		switch {
		case s == nil:
			errs = append(errs, field.Required(p.Child("secret"), "the Secret holding the credential"))
		case s.SecretName == "":
			errs = append(errs, field.Required(p.Child("secret", "secretName"), "the name of the Secret"))
		default:
			errs = appendMsgs(errs, p.Child("secret", "secretName"), s.SecretName, dns1123Subdomain(s.SecretName))
		}
	}
	for i, ac := range vmi.Spec.AccessCredentials {
		p := base.Index(i)
		switch {
		case ac.SSHPublicKey != nil && ac.UserPassword != nil:
			errs = append(errs, field.Invalid(p, "sshPublicKey and userPassword", "an access credential is one of sshPublicKey and userPassword"))
		case ac.SSHPublicKey == nil && ac.UserPassword == nil:
			errs = append(errs, field.Required(p, "one of sshPublicKey and userPassword"))
		}
		if k := ac.SSHPublicKey; k != nil {
			kp := p.Child("sshPublicKey")
			secret(kp.Child("source"), k.Source.Secret)
			mp := kp.Child("propagationMethod")
			m := k.PropagationMethod
			n := 0
			if m.NoCloud != nil {
				n++
				if !hasNoCloud {
					errs = append(errs, field.Invalid(mp.Child("noCloud"), "{}", "needs a cloudInitNoCloud volume"))
				}
			}
			if m.ConfigDrive != nil {
				n++
				if !hasConfigDrive {
					errs = append(errs, field.Invalid(mp.Child("configDrive"), "{}", "needs a cloudInitConfigDrive volume"))
				}
			}
			if m.QemuGuestAgent != nil {
				n++
				if len(m.QemuGuestAgent.Users) == 0 {
					errs = append(errs, field.Required(mp.Child("qemuGuestAgent", "users"), "at least one user to give the keys to"))
				}
			}
			if n != 1 {
				errs = append(errs, field.Invalid(mp, n, "exactly one of noCloud, configDrive and qemuGuestAgent must be set"))
			}
		}
		if up := ac.UserPassword; up != nil {
			upp := p.Child("userPassword")
			secret(upp.Child("source"), up.Source.Secret)
			if up.PropagationMethod.QemuGuestAgent == nil {
				errs = append(errs, field.Required(upp.Child("propagationMethod", "qemuGuestAgent"), "passwords are set through the guest agent"))
			}
		}
	}
	return errs
}
