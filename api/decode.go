package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Kinds and API versions Decode accepts.
const (
	// KindVMI is the kind of a VirtualMachineInstance document.
	KindVMI = "VirtualMachineInstance"
	// KindVM is the kind of a VirtualMachine document; its spec.template
	// becomes the VMI.
	KindVM = "VirtualMachine"
	// APIVersion is the API version Decode reads and writes.
	APIVersion = "kubevirt.io/v1"
	// APIVersionV1alpha3 is the older version KubeVirt still serves with the
	// same schema; Decode accepts it and rewrites it to APIVersion.
	APIVersionV1alpha3 = "kubevirt.io/v1alpha3"
	// MaxDocumentSize is the largest document Decode reads: the request
	// size limit of the Kubernetes API server (3 MiB).
	MaxDocumentSize = 3 << 20
)

// Decode parses one VirtualMachineInstance, or one VirtualMachine whose
// spec.template becomes the VMI, from YAML or JSON.
//
// Decoding is strict: unknown or misspelt fields, duplicate keys and values
// of the wrong type are errors naming their path in the document (for a
// VirtualMachine the path starts at the VM, e.g. spec.template.spec.domain).
// The document must have apiVersion kubevirt.io/v1 (kubevirt.io/v1alpha3,
// which KubeVirt still serves with the same schema, is accepted and rewritten
// to kubevirt.io/v1) and kind VirtualMachineInstance or VirtualMachine. Empty
// input, several documents, non-object documents and documents larger than
// MaxDocumentSize are refused. Every error is an *InvalidError of stage
// StageDecode; it lists every unknown or repeated field and every value of
// the wrong type of the document, and errors.As finds each as a
// *field.Error.
//
// Unlike the Kubernetes API server, Decode refuses a quantity of more than
// 100 characters or with an exponent beyond ±1000 ("1e-2000000000"):
// resource.ParseQuantity's time grows with the square of the exponent, and
// such text would keep it busy for hours.
//
// A VirtualMachine gives a VMI named after the VM, in the VM's namespace,
// with the template's labels and annotations. The VM's instance type and
// preference (which live in a cluster) are not applied, and its run
// strategy and data volume templates, which do not shape the VMI, are
// ignored: the VMI is the template as written.
func Decode(data []byte) (*v1.VirtualMachineInstance, error) {
	vmi, _, err := decode(data)
	return vmi, err
}

// decode is Decode, also returning the kind of the document.
func decode(data []byte) (*v1.VirtualMachineInstance, string, error) {
	if vmi, kind, ok := decodeDirect(data); ok {
		return vmi, kind, nil
	}
	return decodeReference(data)
}

// decodeReference is decode by the API server's way: the document as JSON,
// every key checked against its type (checkKeys), then the API server's
// strict JSON decoder. It reports every error.
func decodeReference(data []byte) (*v1.VirtualMachineInstance, string, error) {
	js, err := toJSON(data)
	if err != nil {
		return nil, "", err
	}
	// One light pass reads apiVersion and kind; a second checks every key
	// against the type of that kind (unknown and repeated keys).
	hdr, err := scanHeader(js)
	if err != nil {
		return nil, "", docError("document is not a JSON or YAML object: expected a VirtualMachineInstance or VirtualMachine")
	}
	kind, errs := checkTypeMeta(hdr)
	var out any
	var vmi *v1.VirtualMachineInstance
	var vm *v1.VirtualMachine
	switch kind {
	case KindVMI:
		vmi = &v1.VirtualMachineInstance{}
		out = vmi
	case KindVM:
		vm = &v1.VirtualMachine{}
		out = vm
	}
	badQuantity := false
	if out != nil {
		keyErrs, bad, err := checkKeys(reflect.TypeOf(out), js)
		if err != nil {
			return nil, "", docError("document is not a JSON or YAML object: expected a VirtualMachineInstance or VirtualMachine")
		}
		errs = append(keyErrs, errs...)
		badQuantity = bad
	}
	// The typed decode runs even after unknown or repeated keys, so that
	// every value of the wrong type is reported with them; not with a
	// quantity whose parsing would not end.
	if out != nil && !badQuantity {
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, out); err != nil {
			for _, fe := range locateErrors(out, js, err) {
				// apiVersion and kind were checked by checkTypeMeta.
				if fe.Field != "apiVersion" && fe.Field != "kind" {
					errs = append(errs, fe)
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, "", fieldErrors(errs...)
	}
	if vm != nil {
		vmi, err := vmFromVM(vm)
		return vmi, kind, err
	}
	vmi.APIVersion = APIVersion
	return vmi, kind, nil
}

// VMDefaultInputName names the input KubeVirt's VM controller adds to the
// VMI of a VirtualMachine whose template has autoattachInputDevice true and
// no input.
const VMDefaultInputName = "default-0"

// vmFromVM returns the VMI a VirtualMachine's template makes.
//
// Instance types and preferences name cluster objects that cannot be read
// here, so they are not applied (KubeVirt's reference conversions did not
// apply them either); the VMI records them with the annotations KubeVirt's
// VM controller puts on the VMIs it creates (kubevirt.io/instancetype-name,
// kubevirt.io/cluster-instancetype-name, kubevirt.io/preference-name,
// kubevirt.io/cluster-preference-name), so that nothing the VM said is lost.
// The run strategy, data volume templates and volume update strategy only
// concern the cluster's handling of the VM and have no VMI counterpart (the
// run strategy is still checked as KubeVirt's VM admission does:
// checkRunStrategy).
// Like KubeVirt's VM controller, it gives a template without a firmware UUID
// the one derived from the VM's name (VMFirmwareUUID), and a template with
// autoattachInputDevice true and no input the input VMDefaultInputName
// (which the converter makes a USB tablet). A bare VMI gets neither: in
// KubeVirt only the VM controller acts on autoattachInputDevice.
func vmFromVM(vm *v1.VirtualMachine) (*v1.VirtualMachineInstance, error) {
	tpl := vm.Spec.Template
	if tpl == nil {
		return nil, fieldErrors(field.Required(field.NewPath("spec", "template"),
			"a VirtualMachine needs a template to make a VirtualMachineInstance from"))
	}
	if err := checkRunStrategy(&vm.Spec); err != nil {
		return nil, fieldErrors(err)
	}
	annotations := tpl.ObjectMeta.Annotations
	if it, pref := vm.Spec.Instancetype, vm.Spec.Preference; it != nil || pref != nil {
		annotations = make(map[string]string, len(tpl.ObjectMeta.Annotations)+2)
		for k, v := range tpl.ObjectMeta.Annotations {
			annotations[k] = v
		}
		if it != nil {
			key := v1.ClusterInstancetypeAnnotation
			if namespacedKind(it.Kind, "VirtualMachineInstancetype") {
				key = v1.InstancetypeAnnotation
			}
			annotations[key] = it.Name
		}
		if pref != nil {
			key := v1.ClusterPreferenceAnnotation
			if namespacedKind(pref.Kind, "VirtualMachinePreference") {
				key = v1.PreferenceAnnotation
			}
			annotations[key] = pref.Name
		}
	}
	spec := tpl.Spec
	if spec.Domain.Firmware == nil || spec.Domain.Firmware.UUID == "" {
		fw := v1.Firmware{}
		if spec.Domain.Firmware != nil {
			fw = *spec.Domain.Firmware.DeepCopy()
		}
		fw.UUID = VMFirmwareUUID(vm.Name)
		spec.Domain.Firmware = &fw
	}
	if a := spec.Domain.Devices.AutoattachInputDevice; a != nil && *a && len(spec.Domain.Devices.Inputs) == 0 {
		spec.Domain.Devices.Inputs = []v1.Input{{Name: VMDefaultInputName}}
	}
	return &v1.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: KindVMI},
		ObjectMeta: metav1.ObjectMeta{
			Name:        vm.Name,
			Namespace:   vm.Namespace,
			Labels:      tpl.ObjectMeta.Labels,
			Annotations: annotations,
		},
		Spec: spec,
	}, nil
}

// runStrategies are the run strategies KubeVirt's VM admission accepts
// without a feature gate (WaitAsReceiver needs DecentralizedLiveMigration).
var runStrategies = []string{
	string(v1.RunStrategyAlways), string(v1.RunStrategyRerunOnFailure), string(v1.RunStrategyManual),
	string(v1.RunStrategyHalted), string(v1.RunStrategyOnce),
}

// checkRunStrategy applies KubeVirt's VM admission rule for the run
// strategy: exactly one of spec.running (deprecated) and spec.runStrategy,
// and a known strategy. The strategy does not shape the VMI, but a VM
// KubeVirt would refuse is refused here too.
func checkRunStrategy(spec *v1.VirtualMachineSpec) *field.Error {
	p := field.NewPath("spec", "runStrategy")
	switch {
	case spec.Running != nil && spec.RunStrategy != nil:
		return field.Invalid(p, string(*spec.RunStrategy), "spec.running and spec.runStrategy are mutually exclusive (spec.running is deprecated)")
	case spec.Running == nil && spec.RunStrategy == nil:
		return field.Required(p, "a VirtualMachine needs a run strategy (or the deprecated spec.running)")
	case spec.RunStrategy != nil && !slices.Contains(runStrategies, string(*spec.RunStrategy)):
		return field.NotSupported(p, string(*spec.RunStrategy), runStrategies)
	}
	return nil
}

// namespacedKind tells whether a matcher's kind names the namespaced kind
// (its singular or plural resource name, in any case) rather than the
// cluster-wide one, which is the default.
func namespacedKind(kind, namespaced string) bool {
	return strings.EqualFold(kind, namespaced) || strings.EqualFold(kind, namespaced+"s")
}

// checkTypeMeta checks apiVersion and kind and returns the kind when it is
// one Decode reads.
func checkTypeMeta(obj map[string]any) (string, field.ErrorList) {
	var errs field.ErrorList
	apiVersion, ok := obj["apiVersion"].(string)
	switch {
	case !ok && obj["apiVersion"] != nil:
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), obj["apiVersion"], "must be a string"))
	case apiVersion == APIVersion, apiVersion == APIVersionV1alpha3:
	case apiVersion == "":
		errs = append(errs, field.Required(field.NewPath("apiVersion"), "must be "+APIVersion))
	default:
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), apiVersion,
			[]string{APIVersion, APIVersionV1alpha3}))
	}
	kind, ok := obj["kind"].(string)
	switch {
	case !ok && obj["kind"] != nil:
		errs = append(errs, field.Invalid(field.NewPath("kind"), obj["kind"], "must be a string"))
	case kind == KindVMI, kind == KindVM:
		return kind, errs
	case kind == "":
		errs = append(errs, field.Required(field.NewPath("kind"), "must be "+KindVMI+" or "+KindVM))
	default:
		errs = append(errs, field.NotSupported(field.NewPath("kind"), kind, []string{KindVMI, KindVM}))
	}
	return "", errs
}

// toJSON turns the input into the JSON text of one object, refusing empty,
// multi-document and non-object input.
func toJSON(data []byte) ([]byte, error) {
	if len(data) > MaxDocumentSize {
		return nil, docError(fmt.Sprintf("document of %d bytes is larger than %d bytes (3 MiB, the Kubernetes API server's limit)", len(data), MaxDocumentSize))
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, docError("empty document: expected a VirtualMachineInstance or VirtualMachine")
	}
	if trimmed[0] == '{' {
		if json.Valid(trimmed) {
			return trimmed, nil
		}
		// Not JSON: a JSON object followed by another value is refused;
		// anything else (a YAML flow mapping, a JSON object followed by a
		// YAML comment) goes the YAML way.
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		var v json.RawMessage
		if dec.Decode(&v) == nil {
			rest := bytes.TrimSpace(trimmed[dec.InputOffset():])
			if len(rest) > 0 && rest[0] != '#' {
				// Where the second value starts, in data.
				at := len(data) - len(rest) - (len(data) - len(bytes.TrimRight(data, " \t\r\n")))
				return nil, docError(fmt.Sprintf("several JSON values (the second starts on line %d, byte %d): expected exactly one VirtualMachineInstance or VirtualMachine object",
					bytes.Count(data[:at], []byte("\n"))+1, at))
			}
		}
	}
	if err := checkSingleDocument(data); err != nil {
		return nil, err
	}
	if js, ok := fastYAMLToJSON(data); ok {
		return js, nil
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, docError(yamlMessage(err, data))
	}
	if err := checkFlowEnd(data); err != nil {
		return nil, err
	}
	js = bytes.TrimSpace(js)
	switch {
	case len(js) == 0 || bytes.Equal(js, []byte("null")):
		return nil, docError("empty document: expected a VirtualMachineInstance or VirtualMachine")
	case js[0] != '{':
		return nil, docError("document is not an object: expected a VirtualMachineInstance or VirtualMachine")
	}
	return js, nil
}

// yamlDuplicate matches the YAML library's report of a duplicate key.
var yamlDuplicate = regexp.MustCompile(`line (\d+): key (".*?") already set in map`)

// yamlAlias matches the YAML library's reports of an anchor whose value
// refers to itself and of an alias to no anchor, which name no line.
var yamlAlias = regexp.MustCompile(`^(?:anchor '(.*)' value contains itself|unknown anchor '(.*)' referenced)$`)

// yamlTag matches the YAML library's reports of a value its tag does not
// fit (`cannot decode !!str "x" as a !!int`, `!!binary value contains
// invalid base64 data`); one of its groups is the tag, to look for in the
// text.
var yamlTag = regexp.MustCompile(`^(?:cannot decode !!\w+ .* as a (!!\w+)|(?:(!!binary) value contains invalid base64 data))$`)

// yamlNullKey finds a line whose mapping key is null: empty, ~ or null,
// after an optional list dash and anchor.
var yamlNullKey = regexp.MustCompile(`(?m)^[ \t]*(?:-[ \t]+)?(?:&\S+[ \t]*)?(?:~|null|Null|NULL)?[ \t]*:(?:[ \t]|$)`)

// yamlSyntax matches the YAML scanner's and parser's syntax errors, which
// carry the line of the problem except on the first line (their line 0).
// Other errors (bad UTF-8, aliases, map keys, tags) name no place.
var yamlSyntax = regexp.MustCompile(`^(did not find |found |could not find |block sequence entries are not allowed|mapping (keys|values) are not allowed|alias value must)`)

// yamlMessage rewrites the YAML library's errors on data into one line,
// e.g. `invalid YAML: line 5: duplicate key "kind"`.
func yamlMessage(err error, data []byte) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	if yamlDuplicate.MatchString(msg) {
		var lines []string
		for _, m := range yamlDuplicate.FindAllStringSubmatch(msg, -1) {
			lines = append(lines, "line "+m[1]+": duplicate key "+m[2])
		}
		return "invalid YAML: " + strings.Join(lines, "; ")
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	// Keys that are not names: said plainly, without Go syntax.
	switch {
	case strings.HasPrefix(msg, "unsupported map key of type: %!s(<nil>)"):
		msg = "a mapping key is null (empty, ~ or null): keys are field names"
		if m := yamlNullKey.FindIndex(data); m != nil {
			msg = fmt.Sprintf("line %d: %s", bytes.Count(data[:m[0]], []byte("\n"))+1, msg)
		}
		return "invalid YAML: " + msg
	case strings.HasPrefix(msg, "unsupported map key of type: "), strings.HasPrefix(msg, "invalid map key: "):
		return "invalid YAML: a mapping key is a list, a mapping or another value that is not a name: keys are field names"
	}
	// Where the problem is, when the library does not say.
	at := -1
	switch m := yamlAlias.FindStringSubmatch(msg); {
	case m != nil && m[1] != "":
		at = bytes.Index(data, []byte("&"+m[1]))
	case m != nil:
		at = bytes.Index(data, []byte("*"+m[2]))
	case yamlTag.MatchString(msg):
		m := yamlTag.FindStringSubmatch(msg)
		at = bytes.Index(data, []byte(m[1]+m[2]))
	case strings.Contains(msg, "UTF-8") || msg == "invalid Unicode character":
		at = firstInvalidUTF8(data)
		if at < 0 {
			// Valid UTF-8 text: the bad bytes are a tag's %-escape ("!%80").
			at = bytes.IndexByte(data, '%')
		}
	case strings.Contains(msg, "UTF-16") || strings.HasSuffix(msg, "low surrogate area"):
		return fmt.Sprintf("invalid YAML: byte %d: %s", utf16Problem(data), msg)
	case strings.HasPrefix(msg, "map merge requires"):
		at = bytes.Index(data, []byte("<<"))
	case msg == "control characters are not allowed":
		if utf16BOM(data) {
			return fmt.Sprintf("invalid YAML: byte %d: %s", utf16NonPrintable(data), msg)
		}
		at = bytes.IndexFunc(bytes.TrimPrefix(data, []byte("\ufeff")), func(r rune) bool { return !yamlPrintable(r) })
		if at >= 0 && bytes.HasPrefix(data, []byte("\ufeff")) {
			at += 3
		}
	case yamlSyntax.MatchString(msg):
		at = 0
	}
	if at >= 0 {
		msg = fmt.Sprintf("line %d: %s", bytes.Count(data[:at], []byte("\n"))+1, msg)
	}
	msg = strings.ReplaceAll(msg, "\n  ", " ")
	msg = strings.ReplaceAll(msg, "\n", " ")
	return "invalid YAML: " + msg
}

// checkSingleDocument refuses YAML streams with more than one document. A
// document marker ("---" or "..." at the start of a line) is allowed before
// the first content and at the very end.
func checkSingleDocument(data []byte) error {
	content, ended := false, false
	several := func(n int) error {
		return docError(fmt.Sprintf("several YAML documents (the second starts on line %d): expected exactly one VirtualMachineInstance or VirtualMachine", n))
	}
	for n := 1; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimRight(line, " \t\r")
		marker := isDocMarker(line)
		if marker {
			if content {
				ended = true
			}
			rest := bytes.TrimSpace(line[3:])
			if len(rest) == 0 || rest[0] == '#' {
				continue
			}
			// "--- value" starts a document with content on the marker line.
			if ended {
				return several(n)
			}
			content = true
			continue
		}
		t := bytes.TrimLeft(line, " \t")
		if len(t) == 0 || t[0] == '#' || (!content && t[0] == '%' && len(t) == len(line)) {
			continue
		}
		if ended {
			return several(n)
		}
		content = true
	}
	return nil
}

func isDocMarker(line []byte) bool {
	if len(line) < 3 {
		return false
	}
	if !bytes.HasPrefix(line, []byte("---")) && !bytes.HasPrefix(line, []byte("...")) {
		return false
	}
	return len(line) == 3 || line[3] == ' ' || line[3] == '\t'
}

// checkFlowEnd refuses content after a document that is a YAML flow
// collection ("{...}" or "[...]" followed by "spec: ..." or another
// object): the YAML library reads the first collection and silently drops
// the rest. data has already been parsed once without error.
func checkFlowEnd(data []byte) (err error) {
	kind := flowKind(data)
	if kind == "" {
		return nil
	}
	defer func() {
		if recover() != nil {
			err = docError("invalid YAML: content after the end of the document")
		}
	}()
	dec := yamlv2.NewDecoder(bytes.NewReader(data))
	var first any
	if dec.Decode(&first) != nil {
		return nil // reported by the first parse
	}
	var rest any
	e := dec.Decode(&rest)
	for e == nil && rest == nil { // empty documents: a final "---"
		e = dec.Decode(&rest)
	}
	switch {
	case e == io.EOF:
		return nil
	case e != nil:
		line := "line 1: " // the YAML library leaves out its line 0
		if m := yamlLine.FindStringSubmatch(e.Error()); m != nil {
			line = "line " + m[1] + ": "
		}
		return docError("invalid YAML: " + line + "content after the end of the top-level " + kind +
			": expected exactly one VirtualMachineInstance or VirtualMachine")
	default:
		return docError("several YAML documents: expected exactly one VirtualMachineInstance or VirtualMachine")
	}
}

// yamlLine finds the line of a YAML library error.
var yamlLine = regexp.MustCompile(`line (\d+)`)

// flowKind names the flow collection the first content of data (after
// comments, directives and a document marker) opens: "flow mapping",
// "flow sequence", or "" for anything else.
func flowKind(data []byte) string {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		t := bytes.TrimSpace(line)
		if isDocMarker(t) {
			t = bytes.TrimSpace(t[3:])
		}
		if len(t) == 0 || t[0] == '#' || t[0] == '%' {
			continue
		}
		switch t[0] {
		case '{':
			return "flow mapping"
		case '[':
			return "flow sequence"
		}
		return ""
	}
	return ""
}

// firstInvalidUTF8 returns the offset of the first byte of data that is not
// valid UTF-8 (a surrogate or a code point beyond U+10FFFF included), or -1.
func firstInvalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// utf16Problem returns the offset of the first broken code unit of a UTF-16
// document (after its byte order mark): an unpaired surrogate, or the odd
// byte at the end.
// yamlPrintable tells whether the YAML library accepts r in a document
// (YAML 1.1's printable set: tab, line breaks, visible ASCII, and Unicode
// outside the C1 controls, surrogates, U+FEFF, U+FFFE and U+FFFF).
func yamlPrintable(r rune) bool {
	switch {
	case r == '\t', r == '\n', r == '\r', r == 0x85:
		return true
	case r >= 0x20 && r <= 0x7e, r >= 0xa0 && r <= 0xd7ff, r >= 0x10000 && r <= 0x10ffff:
		return true
	case r >= 0xe000 && r <= 0xfffd:
		return r != 0xfeff
	}
	return false
}

// utf16BOM tells whether data starts with a UTF-16 byte order mark.
func utf16BOM(data []byte) bool {
	return len(data) >= 2 && (data[0] == 0xfe && data[1] == 0xff || data[0] == 0xff && data[1] == 0xfe)
}

// utf16NonPrintable returns the byte offset of the first UTF-16 code unit
// of a document (after its byte order mark) that is not printable YAML, or
// of its last byte when none is found.
func utf16NonPrintable(data []byte) int {
	le := data[0] == 0xff
	for i := 2; i+1 < len(data); i += 2 {
		u := rune(data[i])<<8 | rune(data[i+1])
		if le {
			u = rune(data[i+1])<<8 | rune(data[i])
		}
		if u >= 0xd800 && u <= 0xdfff {
			i += 2 // a surrogate pair stands for a printable rune
			continue
		}
		if !yamlPrintable(u) {
			return i
		}
	}
	return max(len(data)-1, 0)
}

func utf16Problem(data []byte) int {
	le := len(data) >= 2 && data[0] == 0xff && data[1] == 0xfe
	unit := func(i int) uint16 {
		if le {
			return uint16(data[i]) | uint16(data[i+1])<<8
		}
		return uint16(data[i])<<8 | uint16(data[i+1])
	}
	for i := 2; i+1 < len(data); i += 2 {
		switch u := unit(i); {
		case u >= 0xdc00 && u <= 0xdfff:
			return i
		case u >= 0xd800 && u <= 0xdbff:
			if i+3 >= len(data) {
				return i
			}
			if low := unit(i + 2); low < 0xdc00 || low > 0xdfff {
				return i + 2
			}
			i += 2
		}
	}
	return max(len(data)-1, 0)
}
