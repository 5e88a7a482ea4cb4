package api

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The Kubernetes name checks that every VMI goes through (its name, label
// and annotation keys, disk, volume and network names), each with a quick
// test in front: a name the test accepts is one the Kubernetes function
// accepts, and any other is handed to that function, which writes its
// messages. The functions match regular expressions, which took a sixth of
// Validate's time. TestNameChecks compares each test with its function.

// dns1123Label is validation.IsDNS1123Label.
func dns1123Label(s string) []string {
	if len(s) <= validation.DNS1123LabelMaxLength && isLabelPattern(s) {
		return nil
	}
	return validation.IsDNS1123Label(s)
}

// dns1123Subdomain is validation.IsDNS1123Subdomain.
func dns1123Subdomain(s string) []string {
	if isSubdomain(s) {
		return nil
	}
	return validation.IsDNS1123Subdomain(s)
}

// qualifiedName is validation.IsQualifiedName.
func qualifiedName(s string) []string {
	if isQualifiedName(s) {
		return nil
	}
	return validation.IsQualifiedName(s)
}

// labelValue is validation.IsValidLabelValue.
func labelValue(s string) []string {
	if s == "" || isQualifiedNamePart(s) {
		return nil
	}
	return validation.IsValidLabelValue(s)
}

// isLabelPattern tells whether s matches [a-z0-9]([-a-z0-9]*[a-z0-9])?
// (of any length).
func isLabelPattern(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// isSubdomain tells whether s is a DNS-1123 subdomain: at most 253
// characters, labels of the label pattern joined by dots.
func isSubdomain(s string) bool {
	if len(s) > validation.DNS1123SubdomainMaxLength {
		return false
	}
	for {
		label, rest, more := strings.Cut(s, ".")
		if !isLabelPattern(label) {
			return false
		}
		if !more {
			return true
		}
		s = rest
	}
}

// isQualifiedNamePart tells whether s is the name part of a qualified name:
// at most 63 characters matching ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9].
func isQualifiedNamePart(s string) bool {
	if s == "" || len(s) > 63 || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// isQualifiedName tells whether s is a name part with an optional
// subdomain prefix and a slash.
func isQualifiedName(s string) bool {
	prefix, name, slash := strings.Cut(s, "/")
	if !slash {
		return isQualifiedNamePart(s)
	}
	return isSubdomain(prefix) && isQualifiedNamePart(name)
}

func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
