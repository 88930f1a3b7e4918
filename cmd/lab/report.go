package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Placeholder: the report helper replaces this file.

func newReportCmd(s *streams) *cobra.Command {
	return &cobra.Command{Use: "report RUN...", Short: "Write report.md and report.html for runs", Hidden: true,
		RunE: func(*cobra.Command, []string) error { return errors.New("not yet") }}
}

func newCompareCmd(s *streams) *cobra.Command {
	return &cobra.Command{Use: "compare OLD NEW", Short: "Compare two runs", Hidden: true,
		RunE: func(*cobra.Command, []string) error { return errors.New("not yet") }}
}
