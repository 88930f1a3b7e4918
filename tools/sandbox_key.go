package tools

import (
	"fmt"
	"regexp"
)

// keyName is what a sandbox key may be: a scenario's name (lower-case letters, digits, '.', '_'
// and '-', starting with a letter or digit), which never names a folder outside the sandboxes.
var keyName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// checkSandboxKey refuses a sandbox key that is not a scenario name ([keyName]): claiming
// the sandbox empties <temp>/lab-sandbox/<key>, so an empty key (a Scenario built in code
// without a Name) would empty every sandbox and every lock of the machine's lab processes, and
// "..", or a key with a '/', a folder outside them.
func checkSandboxKey(key string) error {
	if !keyName.MatchString(key) || key == "." || key == ".." {
		return fmt.Errorf("claim a sandbox: scenario name %q: want lower-case letters, digits, '.', '_' and '-', starting with a letter or digit (it names the sandbox folder)", key)
	}
	return nil
}
