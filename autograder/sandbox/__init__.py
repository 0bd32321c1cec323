"""The sandbox: each submission's kernel in bubblewrap, and nbgrader's Execute preprocessor using it."""
