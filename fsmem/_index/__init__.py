"""Search: the tantivy index of a project, kept fresh by asking its store what changed, the text
query and the regex search. Above the stores (it reads through the store interface and builds each
store's feed), below the features.
"""
