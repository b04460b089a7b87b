package main

import (
	"strconv"
	"time"

	"github.com/gorunner/gorunner/schemas"
)

// retentionValue is --retention: a Go duration or a number of days (schemas.ParseRetention).
type retentionValue struct{ d *time.Duration }

func (v retentionValue) String() string {
	if v.d == nil {
		return ""
	}
	if *v.d%(24*time.Hour) == 0 { // whole days, as ParseRetention reads them
		return strconv.FormatInt(int64(*v.d/(24*time.Hour)), 10) + "d"
	}
	return v.d.String()
}

func (v retentionValue) Set(s string) error {
	d, err := schemas.ParseRetention(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

func (retentionValue) Type() string { return "duration" }
