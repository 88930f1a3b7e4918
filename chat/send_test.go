package chat

import (
	"context"
	"errors"
	"testing"
)

// A measured request's error comes as it is, without a fill; a failed fill is a CacheFillError
// carrying the measured result, which the harness keeps.
func TestMeasureThenFill(t *testing.T) {
	measured := &Result{PromptTokens: 7}
	bad := errors.New("bad")
	filled := 0
	measure := func(err error) func(context.Context, *Request, *Reply) (*Result, error) {
		return func(context.Context, *Request, *Reply) (*Result, error) { return measured, err }
	}
	fill := func(err error) func(context.Context, *Request, *Reply, *Result) error {
		return func(context.Context, *Request, *Reply, *Result) error { filled++; return err }
	}
	ctx := context.Background()
	if res, err := MeasureThenFill(ctx, nil, nil, measure(bad), fill(nil)); res != measured || err != bad || filled != 0 {
		t.Errorf("measure failing: %v, %v, %d fills; want the result, bad, no fill", res, err, filled)
	}
	res, err := MeasureThenFill(ctx, nil, nil, measure(nil), fill(bad))
	var fe *CacheFillError
	if res != measured || !errors.As(err, &fe) || !errors.Is(err, bad) || filled != 1 {
		t.Errorf("fill failing: %v, %v, %d fills; want the result, a CacheFillError of bad, one fill", res, err, filled)
	}
	if res, err := MeasureThenFill(ctx, nil, nil, measure(nil), fill(nil)); res != measured || err != nil || filled != 2 {
		t.Errorf("both well: %v, %v, %d fills; want the result, nil, two fills", res, err, filled)
	}
}
