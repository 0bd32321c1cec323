"""What grading hands back: feedback pages, the report, the grades CSV, and the safety of every page that shows a student's work."""
