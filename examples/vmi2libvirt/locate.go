package main

import (
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// fieldLine returns the line of doc (counted from 1) where the field at
// path is written — path as field errors give it:
// spec.domain.devices.disks[0].disk.bus, metadata.labels[kubevirt.io/x].
// When the field is not in the document (a required field that is
// missing), it is the line of the nearest enclosing field that is; 0 when
// the document does not parse as YAML or path names nothing in it.
func fieldLine(doc []byte, path string) int {
	if path == "" {
		return 0
	}
	var root yaml.Node
	if yaml.Unmarshal(doc, &root) != nil || root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return 0
	}
	node, line := root.Content[0], 0
	for _, seg := range pathSegments(path) {
		node = resolve(node)
		child, at := lookup(node, seg)
		if child == nil {
			break
		}
		node, line = child, at
	}
	return line
}

// pathSegments splits a field path into its names, indexes and keys:
// "a.b[0].c[k.x]" gives a, b, 0, c, k.x.
func pathSegments(path string) []string {
	var segs []string
	for len(path) > 0 {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return append(segs, path[1:])
			}
			segs = append(segs, path[1:end])
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			segs = append(segs, path[:end])
			path = path[end:]
		}
	}
	return segs
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	return n
}

// lookup finds seg in a mapping (a key) or a sequence (an index) and
// returns the value with the line where a person finds it: the key's line
// for a mapping, the item's for a sequence.
func lookup(n *yaml.Node, seg string) (*yaml.Node, int) {
	if n == nil {
		return nil, 0
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == seg {
				return n.Content[i+1], k.Line
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i], n.Content[i].Line
		}
	}
	return nil, 0
}
