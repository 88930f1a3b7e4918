package localserver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The private apt runs none of the machine's hooks: an APT::Update::Post-Invoke-Success or
// DPkg::Post-Invoke command of the machine's apt configuration (Debian images' docker-clean,
// appstream's refresh of /var/cache/swcatalog, PackageKit's) would write outside the private
// state, as root even into the machine's own apt cache. The machine's configuration is stood in
// for by APT_CONFIG, which apt reads as its main file.
func TestPrivateAptRunsNoMachineHook(t *testing.T) {
	if _, err := exec.LookPath("apt-config"); err != nil {
		t.Skip("apt-config not found: not a Debian or Ubuntu machine")
	}
	dir := t.TempDir()
	mark := filepath.Join(dir, "hook-ran")
	conf := filepath.Join(dir, "machine-apt.conf")
	hooks := `APT::Update::Pre-Invoke { "touch ` + mark + `"; };
APT::Update::Post-Invoke { "touch ` + mark + `"; };
APT::Update::Post-Invoke-Success { "touch ` + mark + `"; };
DPkg::Pre-Invoke { "touch ` + mark + `"; };
DPkg::Post-Invoke { "touch ` + mark + `"; };
DPkg::Pre-Install-Pkgs { "touch ` + mark + `"; };
`
	if err := os.WriteFile(conf, []byte(hooks), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("APT_CONFIG", conf)
	apt, err := newPrivateApt(filepath.Join(dir, "apt"), AptSource{URI: "http://mirror.invalid/debian", Suite: "unstable", Components: []string{"main"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := apt.run(context.Background(), "apt-config", "dump")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "Invoke") || strings.Contains(l, "Pre-Install-Pkgs") {
			if _, v, _ := strings.Cut(l, " "); strings.Trim(v, `";`) != "" {
				t.Errorf("the private apt keeps a hook of the machine's configuration: %s", l)
			}
		}
	}
}
