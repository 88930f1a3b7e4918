package hygiene

import (
	"crypto/sha256"
	"encoding/hex"

	lab "lab"
)

func labLoopJSON() []byte { return lab.LoopJSON }

// sha8 returns the first 8 hex digits of the SHA-256 of s, as a bracket shows them (§1).
func sha8(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}
