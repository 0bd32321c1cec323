"""Authoring: a question's cells generated from its declaration, the release, the lint, the public repository, per-student variants."""
