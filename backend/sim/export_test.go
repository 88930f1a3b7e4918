package sim

// CheckRendering makes b check every rendering of its incremental renderer against Ollama's
// qwen3.5 renderer: a request whose renderings differ fails.
func CheckRendering(b *Backend) { b.checkRender = true }

// Render is the incremental renderer, for tests.
type Render = renderer
