"""Front ends: the CLI, the A2A server and the reports."""
