"""Intake: submissions brought in from a folder, a zip, an LMS download or the exchange, read safely and repaired."""
