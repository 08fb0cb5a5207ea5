"""The features, written once above the store interface (levels, facts, proposals, context, the
tool, review, copy, sync), and ``Memory``, which composes them for a project.
"""
