package llamacpp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// SaveSlot and RestoreSlot post the action with the file name to the pinned slot and return the
// server's n_saved and n_restored; a server without --slot-save-path is an error saying so.
func TestSaveAndRestoreSlot(t *testing.T) {
	t.Parallel()
	var got []string
	refuse := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body struct{ Filename string }
		json.Unmarshal(b, &body)
		got = append(got, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery+" "+body.Filename)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case refuse:
			w.WriteHeader(http.StatusNotImplemented)
			io.WriteString(w, `{"error":{"code":501,"message":"This server does not support slots action. Start it with `+"`--slot-save-path`"+`","type":"not_supported_error"}}`)
		case r.URL.Query().Get("action") == "save":
			io.WriteString(w, `{"id_slot":2,"filename":"s.bin","n_saved":1745,"n_written":14309796,"timings":{"save_ms":49.865}}`)
		default:
			io.WriteString(w, `{"id_slot":2,"filename":"s.bin","n_restored":1745,"n_read":14309796,"timings":{"restore_ms":42.937}}`)
		}
	}))
	defer srv.Close()
	c, err := New(Options{BaseURL: srv.URL, Slot: 2})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.SaveSlot(context.Background(), "s.bin"); n != 1745 || err != nil {
		t.Errorf("SaveSlot = %d, %v; want 1745", n, err)
	}
	if n, err := c.RestoreSlot(context.Background(), "s.bin"); n != 1745 || err != nil {
		t.Errorf("RestoreSlot = %d, %v; want 1745", n, err)
	}
	want := []string{"POST /slots/2?action=save s.bin", "POST /slots/2?action=restore s.bin"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("requests %q; want %q", got, want)
	}
	refuse = true
	if _, err := c.RestoreSlot(context.Background(), "s.bin"); err == nil || !strings.Contains(err.Error(), "--slot-save-path") {
		t.Errorf("RestoreSlot on a server without --slot-save-path: %v; want an error naming it", err)
	}
}
