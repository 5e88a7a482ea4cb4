package iso

import "testing"

// FuzzBuildRead: whatever Build accepts, Read gives back unchanged; Build
// never panics.
func FuzzBuildRead(f *testing.F) {
	f.Add("cidata", "user-data", []byte("#cloud-config\n"), "openstack/latest/meta_data.json", []byte("{}"))
	f.Add("config-2", "a/b/c", []byte{}, "a/b/d", []byte{0, 1, 2})
	f.Add("ünï", "ünïcode", []byte("x"), "USER-DATA", []byte("y"))
	f.Fuzz(func(t *testing.T, label, n1 string, d1 []byte, n2 string, d2 []byte) {
		files := []File{{Path: n1, Data: d1}, {Path: n2, Data: d2}}
		img, err := Build(label, files)
		if err != nil {
			return
		}
		gotLabel, got, err := Read(img)
		if err != nil {
			t.Fatalf("Read of a built image: %v", err)
		}
		if gotLabel != label {
			t.Fatalf("label %q, want %q", gotLabel, label)
		}
		if len(got) != 2 || string(got[n1]) != string(d1) || string(got[n2]) != string(d2) {
			t.Fatalf("files %q, want %q", got, files)
		}
	})
}
