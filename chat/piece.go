package chat

// PieceCost is the bytes a reply limit takes each piece of a reply to hold at least, however
// few bytes of text it carries: a tool call, a content block (Anthropic), an output item
// (Responses). A backend holds a struct, map entries and buffers for each piece, a few hundred
// bytes of heap, so a reply of many empty pieces must reach the limit as a reply of many bytes
// does. A reply counts as the larger of its bytes and PieceCost per piece ([ReplyCounter.Over]):
// a reply of few pieces is held to its bytes exactly, one of many to at most limit / PieceCost
// pieces (65,536 at [DefaultMaxReplyBytes]).
const PieceCost = 256

// AddPiece counts one more piece of the reply (a new tool call, content block or output item)
// and reports whether the reply is still within the limit.
func (c *ReplyCounter) AddPiece() bool {
	c.Pieces++
	return !c.Over()
}
