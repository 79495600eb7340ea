"""A world model of pass ordering, and a controller trained inside it (README.md)."""
