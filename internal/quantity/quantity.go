// Package quantity parses Kubernetes quantities (resource.Quantity) from
// untrusted text without letting the text choose how long parsing takes.
//
// resource.ParseQuantity works with a decimal of the quantity's full scale:
// its time grows with the square of the exponent, and an exponent beyond
// int32 wraps around, so the 19 bytes "922e372036854775808" ask for
// 10^-1802338304 and keep a CPU busy for hours. No quantity a VMI can mean
// comes near the bounds below; Check refuses text beyond them before it
// reaches resource.ParseQuantity.
package quantity

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Bounds on the text of a quantity.
const (
	// MaxLength is the longest quantity text, in bytes.
	MaxLength = 100
	// MaxExponent bounds a decimal exponent (the 3 of "1e3") either way.
	MaxExponent = 1000
)

// Check returns an error when s, the text of a quantity, is longer than
// MaxLength or has an exponent beyond ±MaxExponent. Text it lets through
// may still be no quantity at all: resource.ParseQuantity says so, quickly.
func Check(s string) error {
	s = strings.TrimSpace(s)
	if len(s) > MaxLength {
		return fmt.Errorf("a quantity of %d characters: at most %d", len(s), MaxLength)
	}
	// The suffix follows the sign, digits and decimal point, as
	// resource.ParseQuantity splits it.
	suffix := strings.TrimLeft(strings.TrimLeft(s, "+-"), "0123456789.")
	if len(suffix) < 2 || (suffix[0] != 'e' && suffix[0] != 'E') {
		return nil
	}
	exp, err := strconv.ParseInt(suffix[1:], 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange), err == nil && (exp < -MaxExponent || exp > MaxExponent):
		return fmt.Errorf("the exponent %s is out of range: at most %d either way", suffix[1:], MaxExponent)
	}
	return nil // a bounded exponent, or a suffix ParseQuantity refuses
}

// Parse is resource.ParseQuantity after Check.
func Parse(s string) (resource.Quantity, error) {
	if err := Check(s); err != nil {
		return resource.Quantity{}, err
	}
	return resource.ParseQuantity(s)
}
