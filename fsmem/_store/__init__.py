"""Where a project's memory is kept.

``interface`` is what every layer above may ask of a store; ``types`` the values every store and every
caller share; ``atomic`` how a file is written whole. The two stores, ``folder`` (the embedded default)
and ``postgres`` (many machines), are independent of each other, and no store imports search, a
feature or ``Memory``: what they need from above comes in through arguments.
"""
