"""Model clients: the chat-model interface, its settings and a scripted model (``model``), and the
OpenAI-compatible HTTP client (``openai``). Independent of stores and search.
"""
