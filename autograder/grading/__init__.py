"""Grading: every submission autograded in parallel and merged into the gradebook; the preflight, run folders, status, manual grades."""
