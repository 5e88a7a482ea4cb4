package api

import (
	"bytes"
	"encoding"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/quantity"
)

// decodeDirect is the common case of decode: a block YAML document that
// fastYAMLTree reads, of a known apiVersion and kind, whose every key is a
// field of its type and every value of the field's type. It reads the
// parsed tree straight into the typed object, without the JSON text, the
// key scan and the JSON decoder between them.
//
// It gives up (ok false) on anything it is not sure of — JSON input,
// whatever fastYAMLTree leaves to the YAML library, an unknown key, a value
// of another type, a quantity that does not parse or would be refused, a
// type with a JSON decoder of its own other than a quantity, a null time
// and the three KubeVirt types whose decoders only rewrite addresses, a
// value those decoders would rewrite, a VirtualMachine decode refuses —
// and decode then takes the reference path (JSON, key scan, the API
// server's JSON decoder), which reports every error. So this never decides
// whether a document is valid, only how fast a valid one is read;
// TestDecodeDirect and FuzzDecodeDirect check that both paths give the
// same object.
func decodeDirect(data []byte) (*v1.VirtualMachineInstance, string, bool) {
	if len(data) > MaxDocumentSize {
		return nil, "", false
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] == '{' {
		return nil, "", false
	}
	// No checkSingleDocument: a document fastYAMLTree reads has no
	// document marker but an optional first line "---", so it is one.
	root, ok := fastYAMLTree(data)
	if !ok {
		return nil, "", false
	}
	apiVersion, kind := root.member("apiVersion"), root.member("kind")
	if apiVersion == nil || apiVersion.kind != '"' || kind == nil || kind.kind != '"' {
		return nil, "", false
	}
	if apiVersion.text != APIVersion && apiVersion.text != APIVersionV1alpha3 {
		return nil, "", false
	}
	plans := directPlansOnce()
	switch kind.text {
	case KindVMI:
		vmi := &v1.VirtualMachineInstance{}
		if !plans.vmi.decode(reflect.ValueOf(vmi).Elem(), root) {
			return nil, "", false
		}
		vmi.APIVersion = APIVersion
		return vmi, KindVMI, true
	case KindVM:
		vm := &v1.VirtualMachine{}
		if !plans.vm.decode(reflect.ValueOf(vm).Elem(), root) {
			return nil, "", false
		}
		vmi, err := vmFromVM(vm)
		if err != nil {
			return nil, "", false
		}
		return vmi, KindVM, true
	}
	return nil, "", false
}

// member returns the value of key k of a mapping node, or nil.
func (n *yamlNode) member(k string) *yamlNode {
	for i, key := range n.keys {
		if key == k {
			return n.vals[i]
		}
	}
	return nil
}

// isNull tells whether a scalar node is YAML's null.
func (n *yamlNode) isNull() bool { return n.kind == 's' && n.text == "null" }

// empty tells whether a node is an empty mapping or sequence written
// "{}" or "[]": 'o' for "{}", 'a' for "[]", 0 for neither.
func (n *yamlNode) empty() byte {
	if n.kind == 's' {
		switch n.text {
		case "{}":
			return 'o'
		case "[]":
			return 'a'
		}
	}
	return 0
}

// planKind says how decodeDirect reads a value of a type.
type planKind byte

const (
	planUnsupported planKind = iota // given up on, whatever the value
	planString
	planBool
	planInt
	planUint
	planFloat
	planPointer
	planStruct
	planSlice
	planMap
	planStringMap // map[string]string, without reflection
	planQuantity  // resource.Quantity
	planTime      // metav1.Time: null only
	planIntOrString
)

// directPlan is how decodeDirect reads a value of one type.
type directPlan struct {
	kind planKind
	typ  reflect.Type
	// elem is the plan of a pointer's, slice's or map's element.
	elem *directPlan
	// fields are a struct's fields by JSON name.
	fields map[string]directField
	// check, for the types KubeVirt decodes with a method of their own that
	// rewrites some values, tells whether the decoded value has none of
	// those: the method would have left it as it is.
	check func(reflect.Value) bool
}

// directField is one JSON field of a struct: its index (several for a
// field promoted from an embedded struct) and its plan.
type directField struct {
	index []int
	plan  *directPlan
}

// directPlans are the plans of the two document types.
type directPlans struct{ vmi, vm *directPlan }

// directPlansOnce builds the plans on first use.
var directPlansOnce = sync.OnceValue(func() directPlans {
	b := planBuilder{}
	return directPlans{
		vmi: b.plan(reflect.TypeFor[v1.VirtualMachineInstance]()),
		vm:  b.plan(reflect.TypeFor[v1.VirtualMachine]()),
	}
})

// untouchedBy are the KubeVirt types with a JSON decoder of their own
// (aliasDecoders) and, for each, whether a decoded value is one that
// decoder leaves unchanged: no name server, NTP server or CIDR, which it
// would rewrite to their canonical text.
var untouchedBy = map[reflect.Type]func(reflect.Value) bool{
	reflect.TypeFor[v1.VirtualMachineInstanceSpec](): func(v reflect.Value) bool {
		dns := v.Addr().Interface().(*v1.VirtualMachineInstanceSpec).DNSConfig
		return dns == nil || len(dns.Nameservers) == 0
	},
	reflect.TypeFor[v1.PodNetwork](): func(v reflect.Value) bool {
		return v.Addr().Interface().(*v1.PodNetwork).VMNetworkCIDR == ""
	},
	reflect.TypeFor[v1.DHCPOptions](): func(v reflect.Value) bool {
		return len(v.Addr().Interface().(*v1.DHCPOptions).NTPServers) == 0
	},
}

var (
	quantityPlanType  = reflect.TypeFor[resource.Quantity]()
	timePlanType      = reflect.TypeFor[metav1.Time]()
	stringMapType     = reflect.TypeFor[map[string]string]()
	intOrStringType   = reflect.TypeFor[intstr.IntOrString]()
	textUnmarshalType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// planBuilder builds plans, each type once (types may refer to
// themselves).
type planBuilder map[reflect.Type]*directPlan

func (b planBuilder) plan(t reflect.Type) *directPlan {
	if p, ok := b[t]; ok {
		return p
	}
	p := &directPlan{typ: t}
	b[t] = p
	pt := reflect.PointerTo(t)
	switch {
	case t == quantityPlanType:
		p.kind = planQuantity
		return p
	case t == timePlanType:
		p.kind = planTime
		return p
	case t == intOrStringType:
		p.kind = planIntOrString
		return p
	case t == stringMapType:
		p.kind = planStringMap
		return p
	case pt.Implements(jsonUnmarshaler) && untouchedBy[t] == nil, pt.Implements(textUnmarshalType):
		return p // planUnsupported
	}
	switch t.Kind() {
	case reflect.String:
		p.kind = planString
	case reflect.Bool:
		p.kind = planBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.kind = planInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		p.kind = planUint
	case reflect.Float32, reflect.Float64:
		p.kind = planFloat
	case reflect.Pointer:
		p.kind, p.elem = planPointer, b.plan(t.Elem())
	case reflect.Slice:
		if t.Elem().Kind() != reflect.Uint8 { // []byte is base64 text
			p.kind, p.elem = planSlice, b.plan(t.Elem())
		}
	case reflect.Map:
		if t.Key().Kind() == reflect.String && !reflect.PointerTo(t.Key()).Implements(textUnmarshalType) {
			p.kind, p.elem = planMap, b.plan(t.Elem())
		}
	case reflect.Struct:
		p.kind, p.fields, p.check = planStruct, map[string]directField{}, untouchedBy[t]
		b.collect(t, nil, p.fields)
	}
	return p
}

// collect adds the JSON fields of struct t, at index prefix, to fields as
// encoding/json names them. A name given twice (by promotion from embedded
// structs) gets an unsupported plan: encoding/json's rules for which one
// wins are not repeated here.
func (b planBuilder) collect(t reflect.Type, prefix []int, fields map[string]directField) {
	walkJSONFields(t, func(name string, i int, ft reflect.Type) {
		b.add(fields, name, directField{index: append(copyIndex(prefix), i), plan: b.plan(ft)})
	}, func(i int, et reflect.Type) {
		promoted := map[string]directField{}
		b.collect(et, append(copyIndex(prefix), i), promoted)
		for name, f := range promoted {
			b.add(fields, name, f)
		}
	})
}

// add adds a field, making a name given twice unsupported.
func (b planBuilder) add(fields map[string]directField, name string, f directField) {
	if _, dup := fields[name]; dup {
		f.plan = &directPlan{kind: planUnsupported}
	}
	fields[name] = f
}

// copyIndex returns a copy of an index prefix.
func copyIndex(prefix []int) []int { return append(make([]int, 0, len(prefix)+1), prefix...) }

// decode reads n into v (a settable zero value of p's type), false when it
// gives up.
func (p *directPlan) decode(v reflect.Value, n *yamlNode) bool {
	// Every value is decoded into a zero value once (the fast path has no
	// repeated key), and null leaves a zero value as it is, as
	// encoding/json does.
	if n.isNull() {
		return p.kind != planUnsupported
	}
	switch p.kind {
	case planString:
		if n.kind != '"' {
			return false
		}
		v.SetString(n.text)
	case planBool:
		switch {
		case n.kind == 's' && n.text == "true":
			v.SetBool(true)
		case n.kind == 's' && n.text == "false":
		default:
			return false
		}
	case planInt:
		i, ok := n.integer()
		if !ok || v.OverflowInt(i) {
			return false
		}
		v.SetInt(i)
	case planUint:
		i, ok := n.integer()
		if !ok || i < 0 || v.OverflowUint(uint64(i)) {
			return false
		}
		v.SetUint(uint64(i))
	case planFloat:
		if _, ok := n.integer(); !ok {
			return false
		}
		f, err := strconv.ParseFloat(n.text, p.typ.Bits())
		if err != nil || v.OverflowFloat(f) {
			return false
		}
		v.SetFloat(f)
	case planPointer:
		e := reflect.New(p.elem.typ)
		if !p.elem.decode(e.Elem(), n) {
			return false
		}
		v.Set(e)
	case planStruct:
		return p.decodeStruct(v, n)
	case planSlice:
		return p.decodeSlice(v, n)
	case planMap:
		return p.decodeMap(v, n)
	case planStringMap:
		return decodeStringMap(v, n)
	case planQuantity:
		return decodeQuantity(v, n)
	case planIntOrString:
		return decodeIntOrString(v, n)
	default: // planUnsupported, and planTime other than null
		return false
	}
	return true
}

// integer returns the value of a plain integer scalar (fastYAMLTree
// writes no other number).
func (n *yamlNode) integer() (int64, bool) {
	if n.kind != 's' || n.empty() != 0 || n.text == "true" || n.text == "false" {
		return 0, false
	}
	i, err := strconv.ParseInt(n.text, 10, 64)
	return i, err == nil
}

func (p *directPlan) decodeStruct(v reflect.Value, n *yamlNode) bool {
	if n.empty() == 'o' {
		return p.check == nil || p.check(v)
	}
	if n.kind != '{' {
		return false
	}
	for i, k := range n.keys {
		f, ok := p.fields[k]
		if !ok {
			return false
		}
		fv := v.Field(f.index[0])
		for _, j := range f.index[1:] {
			if fv.Kind() == reflect.Pointer { // an embedded pointer, as encoding/json allocates it
				if fv.IsNil() {
					fv.Set(reflect.New(fv.Type().Elem()))
				}
				fv = fv.Elem()
			}
			fv = fv.Field(j)
		}
		if !f.plan.decode(fv, n.vals[i]) {
			return false
		}
	}
	return p.check == nil || p.check(v)
}

func (p *directPlan) decodeSlice(v reflect.Value, n *yamlNode) bool {
	if n.empty() == 'a' {
		v.Set(reflect.MakeSlice(p.typ, 0, 0))
		return true
	}
	if n.kind != '[' {
		return false
	}
	s := reflect.MakeSlice(p.typ, len(n.vals), len(n.vals))
	for i, e := range n.vals {
		if !p.elem.decode(s.Index(i), e) {
			return false
		}
	}
	v.Set(s)
	return true
}

func (p *directPlan) decodeMap(v reflect.Value, n *yamlNode) bool {
	if n.empty() == 'o' {
		v.Set(reflect.MakeMap(p.typ))
		return true
	}
	if n.kind != '{' {
		return false
	}
	m := reflect.MakeMapWithSize(p.typ, len(n.keys))
	kt := p.typ.Key()
	for i, k := range n.keys {
		e := reflect.New(p.elem.typ).Elem()
		if !p.elem.decode(e, n.vals[i]) {
			return false
		}
		m.SetMapIndex(reflect.ValueOf(k).Convert(kt), e)
	}
	v.Set(m)
	return true
}

// decodeStringMap reads labels, annotations and the like; a null value is
// an empty string, as encoding/json gives.
func decodeStringMap(v reflect.Value, n *yamlNode) bool {
	if n.empty() == 'o' {
		v.Set(reflect.ValueOf(map[string]string{}))
		return true
	}
	if n.kind != '{' {
		return false
	}
	m := make(map[string]string, len(n.keys))
	for i, k := range n.keys {
		switch e := n.vals[i]; {
		case e.kind == '"':
			m[k] = e.text
		case e.isNull():
			m[k] = ""
		default:
			return false
		}
	}
	v.Set(reflect.ValueOf(m))
	return true
}

// decodeQuantity reads a quantity as resource.Quantity's JSON decoder
// does, given up on when that decoder or decode's own check would refuse
// it.
func decodeQuantity(v reflect.Value, n *yamlNode) bool {
	if n.kind == 's' {
		if _, ok := n.integer(); !ok {
			return false
		}
	} else if n.kind != '"' {
		return false
	}
	if quantity.Check(n.text) != nil {
		return false
	}
	q, err := resource.ParseQuantity(strings.TrimSpace(n.text))
	if err != nil {
		return false
	}
	*v.Addr().Interface().(*resource.Quantity) = q
	return true
}

// decodeIntOrString reads a port or the like as intstr's JSON decoder
// does: a string is a string, a number an int32.
func decodeIntOrString(v reflect.Value, n *yamlNode) bool {
	is := v.Addr().Interface().(*intstr.IntOrString)
	if n.kind == '"' {
		is.Type, is.StrVal = intstr.String, n.text
		return true
	}
	i, ok := n.integer()
	if !ok || int64(int32(i)) != i {
		return false
	}
	is.Type, is.IntVal = intstr.Int, int32(i)
	return true
}
