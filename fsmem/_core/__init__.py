"""The pure core of fsmem: rules with no I/O and no imports outside the standard library (but
detect-secrets' regex plugins, which ``known_keys`` loads inside its function).

Paths, versions, the marker merge, fact rules, secret rules, since/glob parsing, the layout of levels,
the context-injection plan and the tool's request types all live here, so they can be tested without
a disk and reused by every face.
"""
