"""The folder store: one root per project, shared by the processes of one machine through its lock."""
