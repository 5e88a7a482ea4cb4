package vmigen

// KnownBugs are the forms of a VMI that api.Validate accepts and
// convert.Convert converts into a domain that libvirt 9.0 refuses (its
// schema, or virDomainDefineXML with the VALIDATE flag): none today. A
// form this package's properties find goes here, with the generator
// leaving it out and its smallest VMI in TestKnownBugs, until api refuses
// it with the field's path or convert gives a domain libvirt takes. The
// forms fixed so far, and how, are pinned by TestKnownBugs
// (testkit/vmigen/e2e).
var KnownBugs = []string{}
