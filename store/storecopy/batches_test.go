package storecopy_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/store/storecopy"
)

func TestBatches(t *testing.T) {
	tests := []struct {
		records int
		want    []int
	}{
		{0, nil},
		{1, []int{1}},
		{storecopy.BatchSize, []int{storecopy.BatchSize}},
		{storecopy.BatchSize + 1, []int{storecopy.BatchSize, 1}},
	}
	for _, tc := range tests {
		n := 0
		next := func() (storecopy.Record, bool, error) {
			if n == tc.records {
				return storecopy.Record{}, false, nil
			}
			n++
			return storecopy.Record{Kind: "runs"}, true, nil
		}
		var got []int
		require.NoError(t, storecopy.Batches(storecopy.BatchSize, next, func(b []storecopy.Record) error {
			got = append(got, len(b))
			return nil
		}))
		require.Equal(t, tc.want, got, "%d records", tc.records)
	}
}

func TestBatchesStopAtAnError(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	next := func() (storecopy.Record, bool, error) { return storecopy.Record{}, true, nil }
	err := storecopy.Batches(2, next, func([]storecopy.Record) error { calls++; return boom })
	require.ErrorIs(t, err, boom)
	require.Equal(t, 1, calls)
}

func TestConvert(t *testing.T) {
	tests := []struct {
		in   any
		typ  storecopy.Type
		want any
		err  bool
	}{
		{int64(1), storecopy.Bool, true, false},
		{int64(0), storecopy.Bool, false, false},
		{"ab", storecopy.Bytes, []byte("ab"), false},
		{[]byte("ab"), storecopy.Text, "ab", false},
		{nil, storecopy.Int, nil, false},
		{"00000000000000000007", storecopy.Int, int64(7), false},
		{"1", storecopy.Bool, true, false},
		{"7x", storecopy.Int, nil, true},
		{int64(7), storecopy.Text, nil, true},
	}
	for _, tc := range tests {
		got, err := storecopy.Convert(tc.in, tc.typ)
		if tc.err {
			require.Error(t, err, "%#v", tc.in)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
}
