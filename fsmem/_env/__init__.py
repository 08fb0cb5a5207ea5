"""What a process runs in: its settings (``config``), the data folders shipped beside the package
(``resources``), the system check (``system``) and the sample project's records (``sample``).

Imports nothing of fsmem but the errors and the pure rules.
"""
