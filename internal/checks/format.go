package checks

import "github.com/gdrcheck/gdrcheck/internal/report"

// CountsLine summarises the counts: "2 fail, 1 warn, 30 pass, 3 skip, 1 unknown".
// The renderers of a report (table, Markdown, JUnit, JSON) live in package report.
func (r *Report) CountsLine() string { return report.CountsLine(r.Counts) }
