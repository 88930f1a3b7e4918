package harness

import "fmt"

// checkSandboxKey refuses a sandbox key that is not a scenario name ([scenarioName]): claiming
// the sandbox empties <temp>/lab-sandbox/<key>, so an empty key (a Scenario built in code
// without a Name) would empty every sandbox and every lock of the machine's lab processes, and
// "..", or a key with a '/', a folder outside them.
func checkSandboxKey(key string) error {
	if !scenarioName.MatchString(key) || key == "." || key == ".." {
		return fmt.Errorf("claim a sandbox: scenario name %q: want lower-case letters, digits, '.', '_' and '-', starting with a letter or digit (it names the sandbox folder)", key)
	}
	return nil
}
